"""What Slack refuses in a message, as Slack words it: Block Kit's limits (50 blocks, a section's
text 3,000 characters, a button's text 75 and its value 2,000, an ``action_id`` 255 and unique
in the message, 25 elements in an actions block), unknown block types, and a message's text
over 40,000 characters. ``refusal`` gives the ``error`` and the ``response_metadata`` messages
of the ``ok: false`` answer, or None for a message Slack would post."""

from __future__ import annotations

from typing import Any

BLOCKS = 50
SECTION_TEXT = 3000
BUTTON_TEXT = 75
BUTTON_VALUE = 2000
ACTION_ID = 255
ELEMENTS = 25
HEADER_TEXT = 150
TEXT_LIMIT = 40000
TEXT_TYPES = {"mrkdwn", "plain_text"}


def _text(obj: Any, limit: int, where: str, types: set[str] = TEXT_TYPES) -> list[str]:
    if not isinstance(obj, dict) or obj.get("type") not in types:
        return [f"[ERROR] must be a text object of type {sorted(types)} [json-pointer:{where}]"]
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        return [f"[ERROR] must be more than 0 characters [json-pointer:{where}/text]"]
    if len(text) > limit:
        return [f"[ERROR] must be less than {limit + 1} characters [json-pointer:{where}/text]"]
    return []


def _actions(block: dict[str, Any], where: str, seen: set[str]) -> list[str]:
    elements = block.get("elements")
    if not isinstance(elements, list) or not elements:
        return [f"[ERROR] must provide at least 1 element [json-pointer:{where}/elements]"]
    if len(elements) > ELEMENTS:
        return [f"[ERROR] must provide at most {ELEMENTS} items [json-pointer:{where}/elements]"]
    errors: list[str] = []
    for j, el in enumerate(elements):
        at = f"{where}/elements/{j}"
        if not isinstance(el, dict) or el.get("type") != "button":
            errors.append(f"[ERROR] unsupported element type [json-pointer:{at}]")
            continue
        errors += _text(el.get("text"), BUTTON_TEXT, f"{at}", {"plain_text"})
        value = el.get("value", "")
        if not isinstance(value, str) or len(value) > BUTTON_VALUE:
            errors.append(
                f"[ERROR] must be less than {BUTTON_VALUE + 1} characters [json-pointer:{at}/value]"
            )
        action_id = el.get("action_id", "")
        if not isinstance(action_id, str) or len(action_id) > ACTION_ID:
            errors.append(f"[ERROR] must be less than 256 characters [json-pointer:{at}/action_id]")
        elif action_id in seen:
            errors.append(f"[ERROR] action_id already exists [json-pointer:{at}/action_id]")
        seen.add(action_id)
    return errors


def block_errors(blocks: Any) -> list[str]:
    """Why Slack would refuse ``blocks`` (empty: it would not)."""
    if not isinstance(blocks, list):
        return ["[ERROR] must be an array [json-pointer:/blocks]"]
    if len(blocks) > BLOCKS:
        return [f"[ERROR] must provide at most {BLOCKS} items [json-pointer:/blocks]"]
    errors: list[str] = []
    seen: set[str] = set()
    for i, block in enumerate(blocks):
        where = f"/blocks/{i}"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "section":
            errors += _text(block.get("text"), SECTION_TEXT, f"{where}/text")
        elif kind == "header":
            errors += _text(block.get("text"), HEADER_TEXT, f"{where}/text", {"plain_text"})
        elif kind == "context":
            for j, el in enumerate(block.get("elements") or [None]):
                errors += _text(el, SECTION_TEXT, f"{where}/elements/{j}")
        elif kind == "actions":
            errors += _actions(block, where, seen)
        elif kind != "divider":
            errors.append(f"[ERROR] unsupported block type [json-pointer:{where}]")
    return errors


def refusal(params: dict[str, Any]) -> tuple[str, list[str]] | None:
    """The error a ``chat.postMessage``/``chat.update`` with these parameters gets, if any."""
    text, blocks = params.get("text"), params.get("blocks")
    if not text and not blocks:
        return "no_text", []
    if isinstance(text, str) and len(text) > TEXT_LIMIT:
        return "msg_too_long", []
    if blocks is not None:
        errors = block_errors(blocks)
        if errors:
            return "invalid_blocks", errors
    return None
