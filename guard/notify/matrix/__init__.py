"""The Matrix channel (docs/CHANNELS.md): matrix-nio against the client-server API."""
