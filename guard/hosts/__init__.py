"""Hosts Guard acts on over SSH, with the limit enforced on the host (docs/HOSTS.md):
``ssh`` (asyncssh: pinned keys, capped output, timeouts), ``allowlist`` (the exact argv Guard
sends and the allowlist that lets them through), ``setup`` (the script a person installs) and
``guard_exec`` (the host's side, Python 3 standard library, shipped as it runs)."""
