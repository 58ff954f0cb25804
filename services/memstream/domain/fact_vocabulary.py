"""Word lists the fact patterns check values against: general English, not one corpus's.

A value is accepted only when it has the shape of its slot, and for some slots that shape
is a known noun: "I'm a nurse" is a job, "I'm a big fan" is not. The lists are of common
English nouns, kept short on purpose; a missing word costs a fact, a loose list costs truth.
"""

from __future__ import annotations

KIN = frozenset({
    "husband", "wife", "partner", "boyfriend", "girlfriend", "fiance", "fiancee", "spouse",
    "brother", "sister", "mom", "mum", "mother", "dad", "father", "son", "daughter",
    "cousin", "aunt", "uncle", "grandma", "grandmother", "grandpa", "grandfather",
    "best friend", "roommate", "boss", "niece", "nephew", "stepmom", "stepdad",
    "little brother", "little sister", "older brother", "older sister", "younger brother",
    "younger sister", "big brother", "big sister",
})  # fmt: skip

OCCUPATIONS = frozenset({
    "accountant", "actor", "actress", "architect", "artist", "attorney", "baker", "banker",
    "barista", "bartender", "carpenter", "cashier", "chef", "chemist", "cleaner", "coach",
    "consultant", "cook", "counselor", "counsellor", "dancer", "dentist", "designer",
    "developer", "doctor", "driver", "economist", "editor", "electrician", "engineer",
    "entrepreneur", "farmer", "firefighter", "freelancer", "gardener", "hairdresser",
    "illustrator", "instructor", "intern", "janitor", "journalist", "judge", "lawyer",
    "lecturer", "librarian", "manager", "mechanic", "midwife", "musician", "nanny", "nurse",
    "paramedic", "pharmacist", "photographer", "physician", "physicist", "pilot", "plumber",
    "police officer", "officer", "politician", "producer", "professor", "programmer",
    "psychologist", "receptionist", "reporter", "researcher", "salesperson", "scientist",
    "secretary", "singer", "soldier", "student", "surgeon", "tailor", "teacher",
    "technician", "therapist", "translator", "tutor", "veterinarian", "vet", "waiter",
    "waitress", "writer", "author", "novelist", "poet", "songwriter", "streamer",
    "analyst", "administrator", "clerk", "caregiver", "social worker", "worker",
    "volunteer", "paralegal", "optometrist", "nutritionist", "dietitian", "trainer",
})  # fmt: skip

DIETS = frozenset({
    "vegetarian", "vegan", "pescatarian", "pescetarian", "keto", "paleo", "gluten-free",
    "dairy-free", "lactose-intolerant", "teetotal", "sober",
})  # fmt: skip

PETS = frozenset({
    "dog", "puppy", "pup", "kitty", "cat", "kitten", "rabbit", "bunny", "hamster", "parrot",
    "guinea pig", "bird", "fish", "goldfish", "turtle", "tortoise", "snake", "lizard",
    "gecko", "horse", "pony", "ferret", "rat", "mouse", "chicken", "pig", "goat",
})  # fmt: skip

DURABLE_GOODS = frozenset({
    "car", "house", "home", "apartment", "flat", "condo", "bike", "bicycle", "motorcycle",
    "motorbike", "scooter", "boat", "truck", "van", "piano", "guitar", "violin", "drum",
    "drums", "camera", "laptop", "computer", "tablet", "phone", "smartphone", "cabin",
    "farm", "ranch", "studio", "shop", "store", "business", "restaurant", "cafe", "bakery",
    "telescope", "kayak", "canoe", "rv", "caravan", "trailer", "console",
})  # fmt: skip

# Activities named by a noun, not a gerund ("I love pottery"); gerunds are recognised by form.
ACTIVITIES = frozenset({
    "painting", "drawing", "sketching", "pottery", "ceramics", "photography", "yoga",
    "pilates", "running", "jogging", "hiking", "camping", "cycling", "biking", "swimming",
    "surfing", "skiing", "snowboarding", "skating", "skateboarding", "climbing",
    "bouldering", "dancing", "singing", "reading", "writing", "cooking", "baking",
    "gardening", "knitting", "sewing", "crocheting", "fishing", "kayaking", "sailing",
    "golf", "tennis", "soccer", "football", "basketball", "baseball", "volleyball",
    "chess", "poetry", "calligraphy", "woodworking", "meditation", "meditating",
    "boxing", "karate", "judo", "martial", "gymnastics", "archery", "bowling",
    "traveling", "travelling", "volunteering", "playing", "learning", "collecting",
    "birdwatching", "journaling", "blogging", "gaming", "podcasting", "rowing",
    "horseback", "tai", "crossfit", "weightlifting", "lifting", "scrapbooking",
})  # fmt: skip

# Words that open a reaction or a reference, not a value: "I love how...", "I love it".
STOP_OBJECTS = frozenset({
    "it", "that", "this", "those", "these", "them", "you", "your", "yours", "him", "her",
    "his", "their", "our", "my", "me", "us", "how", "what", "when", "where", "why", "who",
    "which", "all", "the", "every", "everything", "each", "so", "too", "to", "being",
    "seeing", "hearing", "knowing", "having", "getting", "looking", "thinking", "feeling",
    "talking", "chatting", "catching", "doing",
    "going", "making", "sharing", "working", "trying", "finding", "spending", "taking",
    "here", "there", "home", "myself", "ourselves", "some", "any", "more", "much", "a",
    "an", "one", "something", "anything", "nothing", "someone", "way", "idea",
})  # fmt: skip
