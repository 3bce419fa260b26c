"""The tools: one table (``registry``) serving the model's investigation and MCP, and the
``Toolbox`` that carries them out for one incident (``toolbox``)."""

from guard.agent.tools.registry import (
    BY_NAME,
    MAX_LOG_LINES,
    SPECS,
    TOOL_NAMES,
    TOOLS,
    ToolSpec,
    input_schema,
)
from guard.agent.tools.toolbox import Proposal, Shelf, Toolbox, ToolError

__all__ = [
    "BY_NAME",
    "MAX_LOG_LINES",
    "SPECS",
    "TOOLS",
    "TOOL_NAMES",
    "Proposal",
    "Shelf",
    "ToolError",
    "ToolSpec",
    "Toolbox",
    "input_schema",
]
