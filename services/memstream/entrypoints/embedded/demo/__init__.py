"""A bundled synthetic demo: two users chatting with the assistant Mira over ten weeks.

`conversations.jsonl` holds the wire events (regenerate with
`python -m memstream.tools.demo.generate`); `questions.json` holds recall questions per user with
the event ids that answer them.
"""

from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent
EVENTS_FILE = "conversations.jsonl"
QUESTIONS_FILE = "questions.json"
DEMO_EVENTS = DEMO_DIR / EVENTS_FILE
DEMO_QUESTIONS = DEMO_DIR / QUESTIONS_FILE
