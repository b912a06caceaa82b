"""Run in Inspect Scout's side venv (scripts/scout-venv.sh): open a transcript database with Scout's own
loader and print, per transcript, the fields depthlab's export must carry, as one JSON object per line.

    python read_scout.py FULL DATABASE_FOLDER...

Every transcript's index entry is printed (with its database folder as ``location``); the messages are read
(Scout's ``read``) for the first FULL of each database only, since reading a transcript whole costs Scout a
query of its own.
"""

from __future__ import annotations

import asyncio
import json
import sys


async def main(full: int, locations: list[str]) -> None:
    for location in locations:
        await read(location, full)


async def read(location: str, full: int) -> None:
    from inspect_scout import transcripts_from
    from inspect_scout._transcript.types import TranscriptContent

    transcripts = transcripts_from(location)
    async with transcripts.reader() as reader:
        count = 0
        async for info in reader.index():
            messages = None
            if count < full:
                messages = (await reader.read(info, TranscriptContent(messages="all", events=None))).messages
            count += 1
            print(
                json.dumps(
                    {
                        "location": location,
                        "transcript_id": info.transcript_id,
                        "task_id": info.task_id,
                        "model": info.model,
                        "score": info.score,
                        "success": info.success,
                        "limit": info.limit,
                        "score_explanation": info.score_explanation,
                        "date": info.date,
                        "message_count": info.message_count,
                        "roles": None if messages is None else [message.role for message in messages],
                        "tool_calls": None
                        if messages is None
                        else sum(len(getattr(message, "tool_calls", None) or []) for message in messages),
                        "metadata": dict(info.metadata),
                    }
                )
            )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2:]))
