"""Helpers the tests share: a Guard home wired to a fake, a real `guard run`, journal
files, the offline test image, the secret corpora. Fixtures built on them are in conftest.py."""
