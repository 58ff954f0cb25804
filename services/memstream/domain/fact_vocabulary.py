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
    "younger sister", "big brother", "big sister", "friend", "neighbour", "neighbor",
    "flatmate", "housemate", "colleague", "coworker", "co-worker", "grandson",
    "granddaughter", "stepson", "stepdaughter", "mother-in-law", "father-in-law",
    "sister-in-law", "brother-in-law", "son-in-law", "daughter-in-law", "twin",
    "twin brother", "twin sister", "parents", "grandparents",
})  # fmt: skip

# Whom "he" or "she" can stand for, by the word that named them; a relation in neither set
# ("my friend", "my partner") takes either pronoun.
MALE_KIN = frozenset({
    "husband", "boyfriend", "fiance", "brother", "dad", "father", "son", "uncle", "grandpa",
    "grandfather", "nephew", "stepdad", "grandson", "stepson", "father-in-law",
    "brother-in-law", "son-in-law",
})  # fmt: skip
FEMALE_KIN = frozenset({
    "wife", "girlfriend", "fiancee", "sister", "mom", "mum", "mother", "daughter", "aunt",
    "grandma", "grandmother", "niece", "stepmom", "granddaughter", "stepdaughter",
    "mother-in-law", "sister-in-law", "daughter-in-law",
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
    "dairy-free", "lactose-intolerant", "teetotal", "sober", "plant-based", "omnivore",
    "flexitarian",
})  # fmt: skip

# The words that say a pet is a dog or a cat: a breed is its kind ("a greyhound" is a dog).
PET_KINDS: dict[str, frozenset[str]] = {
    "dog": frozenset({
        "dog", "puppy", "pup", "terrier", "greyhound", "retriever", "labrador", "poodle",
        "spaniel", "beagle", "collie", "husky", "pug", "dachshund", "chihuahua", "corgi",
        "bulldog",
    }),
    "cat": frozenset({"cat", "kitty", "kitten", "tabby"}),
}  # fmt: skip

PETS = frozenset({
    "dog", "puppy", "pup", "kitty", "cat", "kitten", "rabbit", "bunny", "hamster", "parrot",
    "guinea pig", "bird", "fish", "goldfish", "turtle", "tortoise", "snake", "lizard",
    "gecko", "horse", "pony", "ferret", "rat", "mouse", "chicken", "pig", "goat",
    "terrier", "greyhound", "retriever", "labrador", "poodle", "spaniel", "beagle", "collie",
    "husky", "pug", "dachshund", "chihuahua", "corgi", "bulldog", "tabby",
})  # fmt: skip

VEHICLES = frozenset({
    "car", "truck", "van", "minivan", "pickup", "jeep", "suv", "hatchback", "convertible",
    "motorcycle", "motorbike", "scooter", "moped", "camper", "campervan", "hybrid",
})  # fmt: skip

INSTRUMENTS = frozenset({
    "guitar", "piano", "violin", "viola", "cello", "bass", "drums", "trumpet", "trombone",
    "saxophone", "sax", "flute", "clarinet", "oboe", "ukulele", "harp", "banjo", "keyboard",
    "keyboards", "harmonica", "accordion", "tuba", "mandolin", "organ", "synth",
})  # fmt: skip

# An open attribute's noun, said another way, is often a known attribute: "my home is
# Lyon" is where Maya lives, "my employer" is where she works, "my wife" her partner.
ATTRIBUTE_SYNONYMS = {
    "home": "lives_in", "city": "lives_in", "town": "lives_in", "hometown": "hometown",
    "employer": "works_at", "company": "works_at", "workplace": "works_at",
    "job": "job", "profession": "job", "occupation": "job", "role": "job", "position": "job",
    "husband": "partner", "wife": "partner", "spouse": "partner", "boyfriend": "partner",
    "girlfriend": "partner", "fiance": "partner", "fiancee": "partner", "partner": "partner",
    "major": "studies", "degree": "studies", "school": "studies_at", "uni": "studies_at",
    "university": "studies_at", "college": "studies_at", "diet": "diet", "ride": "car",
    "surname": "surname", "last_name": "surname", "married_name": "surname",
    "family_name": "surname", "maiden_name": "maiden_name", "name": "name",
    "boss": "manager",
}  # fmt: skip

# Nouns a possessive names that are not a lasting attribute of anyone: "my point is",
# "my guess is", "my favourite is". A value after them says nothing about the speaker.
NOT_ATTRIBUTE_NOUNS = frozenset({
    "point", "guess", "bad", "fault", "pleasure", "problem", "question", "answer", "goal",
    "plan", "plans", "dream", "hope", "wish", "advice", "thing", "things", "idea", "heart",
    "mind", "turn", "favourite", "favorite", "fave", "bet", "take", "view", "opinion",
    "reason", "excuse", "word", "words", "god", "gosh", "goodness", "day", "week", "year",
    "month", "life", "way", "place", "time", "birthday", "treat", "go", "first", "last",
    "own", "best", "only", "main", "next", "new", "old", "current",
    "family", "folks", "love", "dear", "darling", "man", "girl",
    "boy", "lord", "bucket", "list", "schedule", "weekend", "morning", "night", "email",
    "number", "phone_number", "address", "password", "story", "experience", "inspiration",
    "motto", "mantra", "theme", "focus", "priority", "concern", "worry", "fear",
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

# Capitalised words that open a sentence or an address without naming anyone or anything:
# "Thanks, my friend", "Today is my birthday".
NOT_NAMES = frozenset({
    "thanks", "thank", "hey", "hi", "hello", "yes", "no", "yeah", "yep", "nope", "oh", "wow",
    "okay", "ok", "sorry", "congrats", "congratulations", "cheers", "love", "bye", "please",
    "well", "right", "sure", "absolutely", "definitely", "exactly", "indeed", "agreed",
    "true", "aw", "aww", "haha", "lol", "omg", "ugh", "hmm", "dear", "today", "tomorrow",
    "tonight", "yesterday", "everything", "nothing", "everyone", "nobody", "someone", "this",
    "that", "it", "he", "she", "they", "we", "you", "there", "here", "what", "which", "who",
    "and", "but", "so", "or", "then", "now", "also", "just", "still", "anyway", "honestly",
    "good", "great", "nice", "awesome", "amazing", "happy", "merry", "welcome", "morning",
    "night", "evening", "afternoon", "mine", "his", "hers", "ours", "theirs", "is", "was",
    "has", "had", "got", "did", "does", "sounds", "looks", "seems", "my", "our", "your",
})  # fmt: skip

# What someone is, not who: "my dad is Irish" names no one.
NATIONALITIES = frozenset({
    "american", "british", "english", "scottish", "welsh", "irish", "canadian", "mexican",
    "brazilian", "argentinian", "chilean", "colombian", "peruvian", "cuban", "spanish",
    "portuguese", "french", "german", "italian", "dutch", "belgian", "swiss", "austrian",
    "polish", "czech", "hungarian", "greek", "turkish", "russian", "ukrainian", "swedish",
    "norwegian", "danish", "finnish", "icelandic", "chinese", "japanese", "korean",
    "vietnamese", "thai", "filipino", "indonesian", "malaysian", "indian", "pakistani",
    "bangladeshi", "iranian", "persian", "iraqi", "syrian", "lebanese", "israeli", "jewish",
    "egyptian", "moroccan", "nigerian", "ghanaian", "kenyan", "ethiopian", "african",
    "australian", "asian", "european", "latino", "latina", "hispanic", "catholic",
    "christian", "muslim", "buddhist", "hindu", "atheist", "jamaican", "haitian",
})  # fmt: skip
