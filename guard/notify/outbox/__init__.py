"""The durable outbox, for every channel: the queue API (``queue``), the send worker
(``worker``, one per channel), delivery of one row (``delivery``), grouped announcements
(``grouping``) and at-most-once posting (``inflight``)."""
