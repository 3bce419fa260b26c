"""The web endpoint: the server (probes, metrics, hooks, MCP's mount) and the console."""
