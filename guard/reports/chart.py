"""A small PNG bar chart of incidents per hour, drawn with Pillow (no plotting stack needed).

24 bars, the tallest scaled to the plot height, hour labels every 3 hours, a count over each
non-empty bar. About 2-4 KB: cheap to send every day.
"""

from __future__ import annotations

import io

from PIL import Image, ImageDraw

W, H, PAD, BASE = 480, 200, 24, 170


def incidents_per_hour(counts: list[int], title: str = "Incidents per hour") -> bytes:
    img = Image.new("RGB", (W, H), "white")
    draw = ImageDraw.Draw(img)
    draw.text((PAD, 4), title, fill="black")
    top = max(counts, default=0) or 1
    step = (W - 2 * PAD) / 24
    for hour, n in enumerate(counts[:24]):
        x0 = PAD + hour * step + 2
        x1 = PAD + (hour + 1) * step - 2
        height = (BASE - PAD) * n / top
        if n:
            draw.rectangle((x0, BASE - height, x1, BASE), fill=(220, 80, 60))
            draw.text((x0, BASE - height - 12), str(n), fill="black")
        if hour % 3 == 0:
            draw.text((x0, BASE + 6), f"{hour:02d}", fill="gray")
    draw.line((PAD, BASE, W - PAD, BASE), fill="gray")
    out = io.BytesIO()
    img.save(out, format="PNG", optimize=True)
    return out.getvalue()
