"""The official ``kubernetes`` client, configured from Guard's settings and used for raw JSON.

Configuration: in-cluster (the pod's service account) when ``kubernetes.in_cluster`` is true,
or when it is unset and ``KUBERNETES_SERVICE_HOST`` is present; otherwise the kubeconfig file
(``kubernetes.kubeconfig``, else ``$KUBECONFIG`` / ``~/.kube/config``) with its
``kubernetes.context`` (else the current context).

Every call asks the client for the undecoded response (``_preload_content=False``) and parses
the JSON itself: Guard reads a few fields, and the typed models reject objects that omit fields
they declare required (which real clusters and older servers do). The API classes stay the
official ones, so paths, query parameters, authentication and TLS are the client's. The client
is blocking; callers run it in threads. ``ApiException`` and urllib3 errors become
``KubernetesError`` here; a watch whose resourceVersion has expired raises ``WatchExpired``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as _client
from kubernetes import config as _config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch import watch as _watch

from guard.config import KubernetesSettings
from guard.domain.exceptions import KubernetesError
from guard.util.plainhttp import cleartext_host

STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
FIELD_MANAGER = "guard"  # who changed a field, in the object's managedFields
LOG_READ_LIMIT = 256 * 1024  # bytes of a log tail read


# The package is only partly annotated; treat its entry points as untyped.
client: Any = _client
config: Any = _config
iter_resp_lines: Any = _watch.iter_resp_lines


class CleartextServer(KubernetesError):
    """The kubeconfig would send its credentials over plain http off this machine."""


def cleartext_problem(settings: KubernetesSettings) -> str | None:
    """For ``guard check-config``: why the configured credentials would travel in clear, if
    they would (a kubeconfig that does not load at all is left for ``guard run`` to report)."""
    try:
        load_configuration(settings)
    except CleartextServer as exc:
        return str(exc)
    except KubernetesError:
        return None
    return None


class WatchExpired(KubernetesError):
    """410 Gone: the resourceVersion is older than the server keeps; list again."""


def load_configuration(settings: KubernetesSettings) -> Any:
    """A ``kubernetes.client.Configuration`` from in-cluster credentials or a kubeconfig."""
    cfg = client.Configuration()
    in_cluster = settings.in_cluster
    if in_cluster is None:
        in_cluster = bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and not settings.kubeconfig
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=cfg)
        else:
            path = str(settings.kubeconfig) if settings.kubeconfig else None
            config.load_kube_config(
                config_file=path, context=settings.context, client_configuration=cfg
            )
    except (config.ConfigException, OSError, TypeError, ValueError) as exc:
        kubeconfig = settings.kubeconfig or os.environ.get("KUBECONFIG", "~/.kube/config")
        where = "in-cluster service account" if in_cluster else f"kubeconfig {kubeconfig}"
        raise KubernetesError(
            f"cannot load Kubernetes credentials from the {where}: {exc} "
            "(set kubernetes.kubeconfig / kubernetes.context, or run in "
            "a pod with a service account)"
        ) from None
    host = cleartext_host(cfg.host)
    has_credential = bool(cfg.api_key) or bool(cfg.password)
    if host is not None and has_credential and not settings.allow_insecure_http:
        raise CleartextServer(
            f"the kubeconfig's server {cfg.host} is plain http to {host}: its token or password "
            "would travel in clear; use the https server, or set "
            "kubernetes.allow_insecure_http: true on a network you trust (loopback hosts are "
            "always allowed)"
        )
    return cfg


SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def pod_namespace(path: Path = SERVICE_ACCOUNT_NAMESPACE) -> str | None:
    """The namespace of the pod this process runs in (from its service account), else None."""
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def _message(body: Any, fallback: str) -> str:
    try:
        return str(json.loads(body).get("message") or fallback)
    except (TypeError, ValueError, AttributeError):
        return fallback


class KubeClient:
    """The few API calls Guard makes, returning plain JSON dicts."""

    def __init__(self, settings: KubernetesSettings, configuration: Any = None) -> None:
        self.settings = settings
        self.api = client.ApiClient(configuration or load_configuration(settings))
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.coordination = client.CoordinationV1Api(self.api)
        self.networking = client.NetworkingV1Api(self.api)

    def close(self) -> None:
        self.api.close()

    def _call(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("_request_timeout", self.settings.timeout)
        try:
            resp = func(*args, _preload_content=False, **kwargs)
        except ApiException as exc:
            cls = WatchExpired if exc.status == 410 else KubernetesError
            raise cls(
                f"{what}: {exc.status} {_message(exc.body, str(exc.reason))}", status=exc.status
            ) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubernetesError(
                f"{what}: cannot reach the Kubernetes API at "
                f"{self.api.configuration.host}: {type(exc).__name__}"
            ) from None
        if not 200 <= resp.status < 300:
            text = resp.data.decode("utf-8", "replace")
            cls = WatchExpired if resp.status == 410 else KubernetesError
            hint = " (see deploy/kubernetes/rbac.yaml)" if resp.status == 403 else ""
            raise cls(
                f"{what}: {resp.status} {_message(text, resp.reason)}{hint}", status=resp.status
            )
        return resp

    def _json(self, what: str, func: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        data = self._call(what, func, *args, **kwargs).data
        return dict(json.loads(data))

    # -- reads ----------------------------------------------------------------------------------

    def list_pods(self, namespace: str, selector: str | None) -> dict[str, Any]:
        return self._json(
            f"list pods in {namespace}",
            self.core.list_namespaced_pod,
            namespace,
            label_selector=selector,
        )

    def watch_pods(
        self,
        namespace: str,
        selector: str | None,
        resource_version: str,
        timeout_seconds: int = 300,
    ) -> Iterator[dict[str, Any]]:
        """Watch events after ``resource_version`` until the server ends the stream.

        Raises ``WatchExpired`` for a 410 (as an HTTP status or an ``ERROR`` event) and
        ``KubernetesError`` when the connection breaks mid-stream.
        """
        resp = self._call(
            f"watch pods in {namespace}",
            self.core.list_namespaced_pod,
            namespace,
            label_selector=selector,
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout_seconds,
            _request_timeout=(self.settings.timeout, timeout_seconds + 30),
        )
        try:
            for line in iter_resp_lines(resp):
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    cls = WatchExpired if obj.get("code") == 410 else KubernetesError
                    raise cls(
                        f"watch pods in {namespace}: {obj.get('message')}", status=obj.get("code")
                    )
                yield event
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            raise KubernetesError(
                f"watch pods in {namespace} broke: {type(exc).__name__}"
            ) from None
        finally:
            resp.close()
            resp.release_conn()

    def pod_log(
        self,
        namespace: str,
        pod: str,
        container: str,
        *,
        follow: bool = False,
        previous: bool = False,
        since_time: str | None = None,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
        read_timeout: float | None = None,
        timestamps: bool = True,
    ) -> Any:
        """``GET .../pods/{pod}/log`` for one container, as the undecoded urllib3 response
        (the caller reads it in pieces and releases it). Lines carry their timestamps
        (``timestamps=true``) unless ``timestamps`` is false. The generated
        ``read_namespaced_pod_log`` has no ``sinceTime``, so the request is built here;
        authentication and TLS stay the client's."""
        query: list[tuple[str, Any]] = [("container", container)]
        if timestamps:
            query.append(("timestamps", True))
        for key, value in (
            ("follow", follow or None),
            ("previous", previous or None),
            ("sinceTime", since_time),
            ("tailLines", tail_lines),
            ("limitBytes", limit_bytes),
        ):
            if value is not None:
                query.append((key, value))

        def get(**kwargs: Any) -> Any:
            request = self.api.param_serialize(
                "GET",
                "/api/v1/namespaces/{namespace}/pods/{name}/log",
                path_params={"namespace": namespace, "name": pod},
                query_params=query,
                header_params={"Accept": "text/plain"},
                auth_settings=["BearerToken"],
            )
            return self.api.call_api(*request, _request_timeout=kwargs["_request_timeout"]).response

        return self._call(
            f"logs of {namespace}/{pod} container {container}",
            get,
            _request_timeout=(self.settings.timeout, read_timeout or self.settings.timeout),
        )

    def tail_log(
        self, namespace: str, pod: str, container: str, tail: int, *, previous: bool = False
    ) -> bytes:
        """The last ``tail`` lines of a container's log (of its previous instance), at most
        ``LOG_READ_LIMIT`` bytes of them (``limitBytes``; no more is read whatever is sent)."""
        res = self.pod_log(
            namespace,
            pod,
            container,
            previous=previous,
            tail_lines=tail,
            limit_bytes=LOG_READ_LIMIT,
        )
        try:
            return bytes(res.read(LOG_READ_LIMIT))
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubernetesError(
                f"logs of {namespace}/{pod} container {container} broke: {type(exc).__name__}"
            ) from None
        finally:
            res.close()  # what is left unread is dropped with the connection

    def list_warning_events(self, namespace: str) -> dict[str, Any]:
        return self._json(
            f"list events in {namespace}",
            self.core.list_namespaced_event,
            namespace,
            field_selector="type=Warning",
        )

    def list_pod_metrics(self, namespace: str, selector: str | None) -> dict[str, Any]:
        """The metrics API's ``PodMetricsList`` (metrics-server); 404 where none is served."""
        return self._json(
            f"list pod metrics in {namespace}",
            client.CustomObjectsApi(self.api).list_namespaced_custom_object,
            "metrics.k8s.io",
            "v1beta1",
            namespace,
            "pods",
            label_selector=selector,
        )

    def get_deployment(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(
            f"get deployment {namespace}/{name}",
            self.apps.read_namespaced_deployment,
            name,
            namespace,
        )

    def list_replicasets(self, namespace: str, selector: str | None) -> dict[str, Any]:
        return self._json(
            f"list replicasets in {namespace}",
            self.apps.list_namespaced_replica_set,
            namespace,
            label_selector=selector,
        )

    def read_lease(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(
            f"get lease {namespace}/{name}",
            self.coordination.read_namespaced_lease,
            name,
            namespace,
        )

    # -- writes ---------------------------------------------------------------------------------

    def create_lease(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a Lease; 409 (``AlreadyExists``) when another replica created it first."""
        return self._json(
            f"create lease {namespace}/{body['metadata']['name']}",
            self.coordination.create_namespaced_lease,
            namespace,
            body,
            field_manager=FIELD_MANAGER,
        )

    def replace_lease(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """PUT a Lease with its ``metadata.resourceVersion``: 409 (``Conflict``) when it changed
        since it was read."""
        return self._json(
            f"update lease {namespace}/{name}",
            self.coordination.replace_namespaced_lease,
            name,
            namespace,
            body,
            field_manager=FIELD_MANAGER,
        )

    def patch_deployment(
        self, namespace: str, name: str, body: Any, content_type: str
    ) -> dict[str, Any]:
        return self._json(
            f"patch deployment {namespace}/{name}",
            self.apps.patch_namespaced_deployment,
            name,
            namespace,
            body,
            field_manager=FIELD_MANAGER,
            _content_type=content_type,
        )

    def get_statefulset(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(
            f"get statefulset {namespace}/{name}",
            self.apps.read_namespaced_stateful_set,
            name,
            namespace,
        )

    def patch_scale(
        self, namespace: str, name: str, replicas: int, kind: str = "deployment"
    ) -> dict[str, Any]:
        """``kubectl scale KIND/NAME --replicas=N``: a merge patch of the scale subresource."""
        return self._json(
            f"scale {kind} {namespace}/{name}",
            self.apps.patch_namespaced_stateful_set_scale
            if kind == "statefulset"
            else self.apps.patch_namespaced_deployment_scale,
            name,
            namespace,
            {"spec": {"replicas": replicas}},
            field_manager=FIELD_MANAGER,
            _content_type=MERGE_PATCH,
        )

    def delete_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(
            f"delete pod {namespace}/{name}", self.core.delete_namespaced_pod, name, namespace
        )

    # -- sandbox step pods (guard.sandbox.kubernetes) -------------------------------------------

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(
            f"get pod {namespace}/{name}", self.core.read_namespaced_pod, name, namespace
        )

    def create_pod(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        return self._json(
            f"create pod {namespace}/{name}", self.core.create_namespaced_pod, namespace, body
        )

    def create_secret(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        return self._json(
            f"create secret {namespace}/{name}", self.core.create_namespaced_secret, namespace, body
        )

    def delete_now(self, kind: str, namespace: str, name: str) -> None:
        """Delete pod or secret ``name`` at once (no grace period); gone already is fine."""
        func = {
            "pod": self.core.delete_namespaced_pod,
            "secret": self.core.delete_namespaced_secret,
        }
        try:
            self._call(
                f"delete {kind} {namespace}/{name}",
                func[kind],
                name,
                namespace,
                grace_period_seconds=0,
            )
        except KubernetesError as exc:
            if exc.status != 404:
                raise

    def list_secrets(self, namespace: str, selector: str) -> dict[str, Any]:
        return self._json(
            f"list secrets in {namespace}",
            self.core.list_namespaced_secret,
            namespace,
            label_selector=selector,
        )

    def get_network_policy(self, namespace: str, name: str) -> dict[str, Any]:
        return self._json(
            f"get networkpolicy {namespace}/{name}",
            self.networking.read_namespaced_network_policy,
            name,
            namespace,
        )


def context_namespace(settings: KubernetesSettings) -> str | None:
    """The namespace of the kubeconfig's context (``kubernetes.context``, else the current one)."""
    try:
        path = str(settings.kubeconfig) if settings.kubeconfig else None
        contexts, active = config.list_kube_config_contexts(config_file=path)
    except (config.ConfigException, OSError, TypeError, ValueError):
        return None
    chosen = next((c for c in contexts if c["name"] == settings.context), active)
    found = (chosen or {}).get("context", {}).get("namespace")
    return str(found) if found else None
