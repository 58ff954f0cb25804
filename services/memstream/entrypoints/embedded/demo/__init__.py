"""A bundled synthetic demo: two users chatting with the assistant Mira over ten weeks.

The story is data: `story/<user>.json` scripts each persona, `story/phrases.json` holds the
shared greetings and closings. `conversations.jsonl` holds the wire events rendered from it
(regenerate with `python -m memstream.entrypoints.embedded.demo.generate`); `questions.json`
holds recall questions per user with the event ids that answer them.
"""

from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent
EVENTS_FILE = "conversations.jsonl"
QUESTIONS_FILE = "questions.json"
DEMO_EVENTS = DEMO_DIR / EVENTS_FILE
DEMO_QUESTIONS = DEMO_DIR / QUESTIONS_FILE
