"""The Slack channel (docs/CHANNELS.md): Block Kit over the Web API; Socket Mode, or a signed
HTTP endpoint."""
