"""Guard's tools for any agent, over the Model Context Protocol (docs/MCP.md).

``guard mcp`` serves them on stdio (a local agent; actor ``mcp:stdio:<unix user>``), and the
web server at ``/mcp`` over streamable HTTP, behind a bearer token from ``guard access token
create`` (actor ``token:<name>``; a browser page only from an allowed ``Origin``). The tools
are ``guard.agent.tools``' table; each call is authorised by the gate with the caller's role,
audited, and its result redacted, then, if it quotes what Guard read, fenced as untrusted data
(``service``); the SDK's low-level server carries them (``server``, ``http``, ``stdio``).
"""
