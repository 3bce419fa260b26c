"""The answers policy: what Guard does with what a person did in a chat, for every channel.

A channel's inbound adapter turns a press, a reply or a slash command into a neutral
``guard.notify.inbound.Inbound`` event; ``Answers`` (``presses``, on ``slash``, on ``replies``,
on ``base``) decides what it means, through the one authorisation gate (``senders``): a press
spends its approval and queues a human command, a reply that is plainly a fix queues one (an
ambiguous one is asked about first: ``confirm``), a reply to a grouped message names its
incident (``#ID FIX``), the acknowledge press and ``/ack`` stop escalation (``ackpress``), the
slash commands answer from the store (``commands``). Every answer goes through the outbox in
the channel's ``Markup``; only a press's immediate answer (``Inbound.answer``) does not.
"""
