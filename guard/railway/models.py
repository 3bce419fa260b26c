"""Typed views of what Guard reads from Railway's API (field names as Railway spells them).

Only the fields Guard selects are modelled; unknown extra fields are ignored so a schema that
grows does not break Guard. ``LogLine.timestamp`` stays a string: Railway sends nanosecond
precision, which ``datetime`` would truncate (see ``guard.railway.cursor``).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class DeploymentStatus(StrEnum):
    BUILDING = "BUILDING"
    CRASHED = "CRASHED"
    DEPLOYING = "DEPLOYING"
    FAILED = "FAILED"
    INITIALIZING = "INITIALIZING"
    NEEDS_APPROVAL = "NEEDS_APPROVAL"
    QUEUED = "QUEUED"
    REMOVED = "REMOVED"
    REMOVING = "REMOVING"
    SKIPPED = "SKIPPED"
    SLEEPING = "SLEEPING"
    SUCCESS = "SUCCESS"
    WAITING = "WAITING"
    UNKNOWN = "UNKNOWN"  # a status this Guard does not know yet: says nothing either way

    @classmethod
    def _missing_(cls, value: object) -> DeploymentStatus:
        return cls.UNKNOWN


class Named(_Model):
    id: str
    name: str


class Project(_Model):
    id: str
    name: str
    services: list[Named] = Field(default_factory=list)
    environments: list[Named] = Field(default_factory=list)


class ProjectTokenScope(_Model):
    project_id: str = Field(alias="projectId")
    environment_id: str = Field(alias="environmentId")


class Deployment(_Model):
    id: str
    status: DeploymentStatus
    created_at: datetime = Field(alias="createdAt")
    service_id: str | None = Field(default=None, alias="serviceId")
    environment_id: str | None = Field(default=None, alias="environmentId")
    can_rollback: bool = Field(default=False, alias="canRollback")
    can_redeploy: bool = Field(default=False, alias="canRedeploy")


class LogAttribute(_Model):
    key: str
    value: str


class LogLine(_Model):
    timestamp: str
    message: str = ""
    severity: str | None = None
    attributes: list[LogAttribute] = Field(default_factory=list)

    @field_validator("message", mode="before")
    @classmethod
    def _null_message(cls, value: object) -> object:
        return "" if value is None else value  # Railway sends null for an empty line


class Target(_Model):
    """A service in an environment, resolved to ids (and names, for humans)."""

    project_id: str
    service_id: str
    service_name: str
    environment_id: str
    environment_name: str

    @property
    def label(self) -> str:
        return f"{self.environment_name}/{self.service_name}"
