"""Email: a notifying channel over SMTP (docs/CHANNELS.md, Email)."""
