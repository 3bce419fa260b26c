"""Payloads to signals: Alertmanager's and Grafana's alerts, and any JSON body.

- ``alertmanager`` (webhook version 4) and ``grafana``: each entry of ``alerts`` is one signal,
  mapped by the source's Jinja2 templates over the alert (``labels``, ``annotations``,
  ``startsAt``, ``fingerprint``, ...; the notification's own fields, ``receiver``,
  ``commonLabels``, ``externalURL``..., are there too). ``firing`` fires, ``resolved`` is an
  ``ok`` for the same check.
- ``webhook``: the body is one signal, mapped by JMESPath expressions.

Every signal says where it came from, for verification by the source: ``monitor_id`` is
``intake:<id>``, and ``details`` hold ``intake`` (the source id), ``delivery`` (the redelivery
key, ``guard.triage.redelivery``) and ``alert`` (fingerprint, labels, annotations, startsAt,
endsAt, generatorURL; for a webhook its dedup_key and status). Incidents keep the details of
the signal that opened them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from guard.config.intake import SEVERITIES, IntakeSource
from guard.domain.records import Grouping, Signal, utcnow
from guard.grouping.tokens import template_tokens

TEXT_LIMIT = 2000  # characters of a rendered message
NAME_LIMIT = 200  # characters of a kind or target
SIGNED_AT = "signed_at"  # the sender's signed time in details (guard.triage.redelivery reads it)
RESOLVED = frozenset({"resolved", "resolve", "ok", "closed", "recovered", "normal", "inactive"})


class BadPayload(ValueError):
    """The body cannot be read as this source's payload; the message names the field."""


@dataclass
class Mapper:
    """One source's compiled mapping (built once per source)."""

    source: IntakeSource
    _fields: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        compile_one = self.source.kind_of().compile
        self._fields = {n: compile_one(t) for n, t in self.source.field_sources().items()}

    @property
    def monitor_id(self) -> str:
        return f"intake:{self.source.id}"

    def signals(self, body: Any, signed_at: float | None = None) -> list[Signal]:
        """The body's signals; ``signed_at``, the sender's signed time, orders their episodes
        (``guard.triage.redelivery``: a ``resolved`` signed before the latest firing is stale)."""
        if not isinstance(body, dict):
            raise BadPayload("body: expected a JSON object")
        found = self._alerts(body) if self.source.kind_of().alerts else [self._webhook(body)]
        if signed_at is not None:
            for sig in found:
                sig.details[SIGNED_AT] = signed_at
        return found

    # -- Alertmanager and Grafana ---------------------------------------------------------------

    def _alerts(self, body: dict[str, Any]) -> list[Signal]:
        kind = self.source.kind_of()
        if kind.version is not None and str(body.get("version", kind.version)) != kind.version:
            raise BadPayload(
                f"version: expected {kind.version} ({kind.title}'s webhook), got {body['version']}"
            )
        alerts = body.get("alerts")
        if not isinstance(alerts, list):
            raise BadPayload("alerts: " + ("field required" if alerts is None else "not a list"))
        common = {k: v for k, v in body.items() if k != "alerts"}
        return [self._alert(i, alert, common) for i, alert in enumerate(alerts)]

    def _alert(self, i: int, alert: Any, common: dict[str, Any]) -> Signal:
        if not isinstance(alert, dict):
            raise BadPayload(f"alerts[{i}]: expected an object")
        status = alert.get("status")
        if status not in ("firing", "resolved"):
            raise BadPayload(f"alerts[{i}].status: expected firing or resolved")
        labels = alert.get("labels")
        if not isinstance(labels, dict):
            problem = "field required" if labels is None else "not an object"
            raise BadPayload(f"alerts[{i}].labels: {problem}")
        annotations = alert.get("annotations") or {}
        if not isinstance(annotations, dict):
            raise BadPayload(f"alerts[{i}].annotations: not an object")
        fp = str(alert.get("fingerprint") or _label_hash(labels))
        context = {**common, **alert, "labels": labels, "annotations": annotations}
        kind, target, severity, message = (
            self._render(n, i, context) for n in ("kind", "target", "severity", "message")
        )
        found = {
            "fingerprint": fp,
            "labels": labels,
            "annotations": annotations,
            "startsAt": alert.get("startsAt"),
            "endsAt": alert.get("endsAt"),
            "generatorURL": alert.get("generatorURL"),
        }
        return self._signal(
            kind=kind,
            target=target,
            severity=severity,
            message=message,
            resolved=status == "resolved",
            alert_id=fp,
            delivery=f"{fp}@{alert.get('startsAt') or ''}",
            found=found,
            fields=labels,
        )

    def _render(self, name: str, i: int, context: dict[str, Any]) -> str:
        try:
            text = self._fields[name].render(context)
        except Exception as exc:  # a template that fails on this alert (a filter, a type)
            raise BadPayload(f"alerts[{i}]: the {name} template fails on it: {exc}") from None
        return _text(text, NAME_LIMIT if name in ("kind", "target") else TEXT_LIMIT)

    # -- any JSON -------------------------------------------------------------------------------

    def _webhook(self, body: dict[str, Any]) -> Signal:
        found = {n: self._search(n, body) for n in self._fields}
        for name in ("kind", "target"):
            if found[name] in (None, "", [], {}):
                text = self.source.field_sources()[name]
                raise BadPayload(f"{name}: the JMESPath {text!r} finds nothing in the body")
        dedup = found.get("dedup_key")
        status = str(found.get("status") or "firing").lower()
        return self._signal(
            kind=_text(found["kind"], NAME_LIMIT),
            target=_text(found["target"], NAME_LIMIT),
            severity=_text(found.get("severity"), NAME_LIMIT),
            message=_text(found.get("message"), TEXT_LIMIT),
            resolved=status in RESOLVED,
            alert_id=None if dedup in (None, "") else _text(dedup, NAME_LIMIT),
            delivery=None if dedup in (None, "") else f"dedup:{_text(dedup, NAME_LIMIT)}@",
            found={"dedup_key": dedup, "status": status},
            fields={k: v for k, v in body.items() if isinstance(v, str | int | float | bool)},
        )

    def _search(self, name: str, body: dict[str, Any]) -> Any:
        try:
            return self._fields[name].search(body)
        except Exception as exc:  # a function given the wrong type by this body
            text = self.source.field_sources()[name]
            raise BadPayload(f"{name}: the JMESPath {text!r} fails on the body: {exc}") from None

    # -- both -----------------------------------------------------------------------------------

    def _signal(
        self,
        *,
        kind: str,
        target: str,
        severity: str,
        message: str,
        resolved: bool,
        alert_id: str | None,
        delivery: str | None,
        found: dict[str, Any],
        fields: dict[str, Any],
    ) -> Signal:
        kind = kind or "alert"
        target = target or self.source.id
        grouping, check = self._grouping(kind, message, alert_id, fields)
        details: dict[str, Any] = {"intake": self.source.id, "alert": found}
        if delivery:
            details["delivery"] = delivery
        if grouping.by == "rule":
            details["rule"] = self.source.id
        return Signal(
            monitor_id=self.monitor_id,
            source=self.source.type,
            target=target,
            kind=kind,
            message=message or kind,
            status="ok" if resolved else "firing",
            severity=SEVERITIES.get(severity.lower(), self.source.default_severity),
            observed_at=utcnow(),
            details=details,
            grouping=grouping,
            check=check,
        )

    def _grouping(
        self, kind: str, message: str, alert_id: str | None, fields: dict[str, Any]
    ) -> tuple[Grouping, str]:
        """Which incident the alert belongs to, and which ``check`` its resolution ends."""
        by = self.source.group_by
        if isinstance(by, list):
            picked = tuple((name, str(fields.get(name, ""))) for name in by)
            return Grouping("fields", fields=picked), "fields:" + json.dumps(picked)
        if by == "alert" and alert_id is not None:
            return Grouping("fields", fields=(("alert", alert_id),)), f"alert:{alert_id}"
        if by == "template":
            content = " ".join(template_tokens(message or kind))
            return Grouping("template", content=content), f"kind:{kind}"
        return Grouping("rule"), f"kind:{kind}"


def _text(value: Any, limit: int) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return " ".join(text.split())[:limit]


def _label_hash(labels: dict[str, Any]) -> str:
    """An alert's identity when the sender gives no fingerprint: its labels."""
    material = json.dumps(labels, sort_keys=True, default=str)
    return hashlib.sha256(material.encode()).hexdigest()[:16]
