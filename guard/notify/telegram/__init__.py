"""The Telegram gateway: PTB application, outbox, rendering, authorisation (see gateway)."""
