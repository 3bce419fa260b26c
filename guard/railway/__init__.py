"""Railway's public GraphQL API: the client, its models, rate budget and log cursors."""

from guard.domain.exceptions import RailwayError
from guard.railway.budget import Limiter, railway_budget_warnings, shared_limiter
from guard.railway.client import RailwayClient
from guard.railway.cursor import LogCursor
from guard.railway.models import (
    Deployment,
    DeploymentStatus,
    LogLine,
    Project,
    ProjectTokenScope,
    Target,
)
from guard.railway.targets import resolve_target

__all__ = [
    "Deployment",
    "DeploymentStatus",
    "Limiter",
    "LogCursor",
    "LogLine",
    "Project",
    "ProjectTokenScope",
    "RailwayClient",
    "RailwayError",
    "Target",
    "railway_budget_warnings",
    "resolve_target",
    "shared_limiter",
]
