"""A credential never goes over plain http off this machine unless the section says so:
``guard check-config`` (and every command that loads the config) exits 2 naming the field."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from guard.config import KubernetesSettings, Settings
from guard.k8s.client import CleartextServer, load_configuration
from guard.util.plainhttp import cleartext_host, is_loopback
from tests.conftest import GuardHome

LLM = {"provider": "openai", "model": "m", "api_key": "sk-test-0123456789"}
REFUSED: dict[str, tuple[dict[str, Any], str, str]] = {
    "git token to an http remote": (
        {"skills": {"git_remote": "http://git.example/acme/s.git", "git_token": "ghp_x1"}},
        "skills.git_remote",
        "git_token",
    ),
    "git token to an http forge API": (
        {
            "skills": {
                "git_remote": "https://git.example/acme/s.git",
                "git_token": "ghp_x1",
                "forge_api_url": "http://git.example/api/v1",
            }
        },
        "skills.forge_api_url",
        "git_token",
    ),
    "api key to an http model": (
        {"llm": {**LLM, "base_url": "http://10.0.0.5:8000/v1"}},
        "llm.base_url",
        "api_key",
    ),
    "api key to an http fallback": (
        {"llm": {**LLM, "fallback": [{**LLM, "base_url": "http://models.lan/v1"}]}},
        "llm.fallback[0].base_url",
        "api_key",
    ),
    "bot token to an http Bot API": (
        {"telegram": {"bot_token": "123:abc", "chat_id": 1, "api_base_url": "http://tg.lan"}},
        "telegram.api_base_url",
        "bot_token",
    ),
    "railway token to an http API": (
        {"railway": {"project_token": "rw-token", "api_url": "http://rw.lan/graphql/v2"}},
        "railway.api_url",
        "project_token",
    ),
    "a password in an http model URL": (
        {"llm": {**LLM, "api_key": None, "base_url": "http://u:hunter2@models.lan/v1"}},
        "llm.base_url",
        "the password in the URL",
    ),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_check_config_refuses_a_credential_over_plain_http(home: GuardHome, case: str) -> None:
    config, field, secret = REFUSED[case]
    home.write_config(config)
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"guard.yaml: {field}: plain http to " in proc.stderr
    assert f"would send {secret} in clear" in proc.stderr
    assert "allow_insecure_http: true" in proc.stderr  # the way out, named
    assert "hunter2" not in proc.stderr and "0123456789" not in proc.stderr
    assert home.cli("run", "--once", check=False).returncode == 2  # refused to run, too


def every_section(url: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "skills": {"git_remote": url["git"], "git_token": "ghp_x1", **extra},
        "llm": {**LLM, "base_url": url["llm"], **extra},
        "telegram": {"bot_token": "123:abc", "chat_id": 1, "api_base_url": url["tg"], **extra},
        "railway": {"project_token": "rw-token", "api_url": url["railway"], **extra},
    }


def test_check_config_accepts_loopback_and_an_explicit_allow(home: GuardHome) -> None:
    loopback = {
        "git": "http://127.0.0.1:9418/acme/s.git",
        "llm": "http://localhost:11434/v1",
        "tg": "http://[::1]:8081",
        "railway": "http://127.8.9.10/graphql/v2",
    }
    home.write_config(every_section(loopback))
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 0, proc.stderr
    lan = {
        "git": "http://git.lan/acme/s.git",
        "llm": "http://models.lan/v1",
        "tg": "http://tg.lan",
        "railway": "http://rw.lan/graphql/v2",
    }
    home.write_config(every_section(lan, allow_insecure_http=True))
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.unit
def test_the_allowance_is_per_section() -> None:
    llm = {**LLM, "base_url": "http://models.lan/v1", "allow_insecure_http": True}
    fallback = {**LLM, "base_url": "http://other.lan/v1"}
    with pytest.raises(ValueError, match=r"fallback\.0\.base_url"):
        Settings(llm={**llm, "fallback": [fallback]})
    ok = Settings(llm={**llm, "fallback": [{**fallback, "allow_insecure_http": True}]})
    assert [e.base_url for e in ok.llm.endpoints()] == [
        "http://models.lan/v1",
        "http://other.lan/v1",
    ]
    assert Settings(llm={**LLM, "api_key": None, "base_url": "http://models.lan/v1"})  # no secret
    assert Settings(skills={"git_remote": "http://git.lan/s.git"})  # nothing to send


@pytest.mark.unit
@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://127.0.0.1:8080/x", None),
        ("http://127.255.0.3/", None),
        ("http://[::1]:80/", None),
        ("http://[::ffff:127.0.0.1]/", None),
        ("http://LOCALHOST./", None),
        ("https://api.example.com/", None),
        ("file:///srv/skills.git", None),
        ("http://10.0.0.5/", "10.0.0.5"),
        ("HTTP://Api.Example.com/", "api.example.com"),
        ("http://localhost.evil.example/", "localhost.evil.example"),
        ("http://128.0.0.1/", "128.0.0.1"),
        ("http://[::2]/", "::2"),
        ("http://0.0.0.0/", "0.0.0.0"),
    ],
)
def test_cleartext_host(url: str, host: str | None) -> None:
    assert cleartext_host(url) == host
    assert is_loopback("127.0.0.1") and not is_loopback("example.com")


def kubeconfig(home: GuardHome, server: str) -> str:
    path = home.root / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "k", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "kube-token-0123456789"}}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            }
        )
    )
    return str(path)


def test_check_config_refuses_a_kubeconfig_token_over_plain_http(home: GuardHome) -> None:
    home.playbook("k8s", [{"id": "pods", "type": "kubernetes", "namespace": "shop"}])
    home.write_config({"kubernetes": {"kubeconfig": kubeconfig(home, "http://kube.lan:6443")}})
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "kubernetes.kubeconfig: the kubeconfig's server http://kube.lan:6443 is plain" in (
        proc.stderr
    )
    assert "kubernetes.allow_insecure_http: true" in proc.stderr
    assert "kube-token-0123456789" not in proc.stderr
    home.write_config(
        {
            "kubernetes": {
                "kubeconfig": kubeconfig(home, "http://kube.lan:6443"),
                "allow_insecure_http": True,
            }
        }
    )
    assert home.cli("check-config", check=False).returncode == 0


@pytest.mark.unit
def test_the_kubernetes_client_refuses_it_too(home: GuardHome) -> None:
    refused = KubernetesSettings(kubeconfig=kubeconfig(home, "http://10.1.2.3:8080"))
    with pytest.raises(CleartextServer, match=r"plain http to 10\.1\.2\.3"):
        load_configuration(refused)
    assert load_configuration(
        KubernetesSettings(kubeconfig=kubeconfig(home, "http://127.0.0.1:8080"))
    ).host == ("http://127.0.0.1:8080")
    assert load_configuration(KubernetesSettings(kubeconfig=kubeconfig(home, "https://kube.lan")))
