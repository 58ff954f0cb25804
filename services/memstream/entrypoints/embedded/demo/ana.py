"""Ana, a UX designer in Lisbon: a rescue dog, a ferry-app project, a trip to the Azores.

Her sessions run from 20 January to 1 April 2025, so they cross three month boundaries and
the switch to summer time (30 March), which moves her UTC offset from +00:00 to +01:00.
"""

from __future__ import annotations

from memstream.tools.demo.story import Exchange, Persona, Question, SessionScript

SESSIONS = (
    SessionScript(
        "2025-01-20 19:10",
        (
            Exchange(
                "Big news: I adopted a dog yesterday! He's a two-year-old beagle mix called "
                "Biscoito, from the Patas Amigas shelter in Sintra.",
                "Congratulations! Biscoito is a lovely name. How is he settling in?",
                fact="dog_adopted",
            ),
            Exchange(
                "He sniffed every corner of the flat and then fell asleep on my feet. "
                "Timing is a bit crazy though: at work we just kicked off the redesign of "
                "Marés, the ferry-booking app, and the prototype is due on 28 February.",
                "A new dog and a new project in the same week! What's your part in Marés?",
                fact="project_deadline_first",
            ),
            Exchange(
                "I'm the lead designer at Onda Studio on it. Rui is the product manager.",
                "Then you get to shape the whole thing. I'm sure it'll be great.",
                fact="work_role",
            ),
        ),
    ),
    SessionScript(
        "2025-01-23 08:05",
        (
            Exchange(
                "I started a couch-to-5k plan this week. I run on Tuesdays, Thursdays and "
                "Saturdays before work, along the river in Belém.",
                "Mornings by the Tagus sound like a great way to start. How did today go?",
                fact="running_plan",
            ),
            Exchange(
                "Run two of week one done. The intervals are short but my lungs disagree.",
                "That's normal at the start. The plan builds up slowly for a reason.",
            ),
            Exchange(
                "Also, Biscoito chewed the laces off my old sneakers last night.",
                "Ha, maybe a sign you need proper running shoes anyway. Does he have chew toys?",
            ),
        ),
    ),
    SessionScript(
        "2025-01-26 17:30",
        (
            Exchange(
                "My sister Inês came for lunch and I made bacalhau à Brás. First time I "
                "didn't overcook the potatoes!",
                "Nice! Thin straw potatoes are the tricky part. Did Inês approve?",
                fact="cooking_bacalhau",
            ),
            Exchange(
                "She had seconds. Then she suggested we take a trip together this spring, "
                "just the two of us. We're thinking of the Azores.",
                "What a good idea. Any island in mind?",
                fact="trip_idea",
            ),
            Exchange(
                "Not yet. She likes hiking, I want hot springs and whales.",
                "São Miguel has both, if that helps the decision.",
            ),
        ),
    ),
    SessionScript(
        "2025-01-29 21:40",
        (
            Exchange(
                "Wednesday means ceramics class at the Barro Azul studio in Graça. "
                "Marta, the teacher, had us throw our first bowls on the wheel tonight.",
                "How did your first bowl turn out?",
                fact="ceramics_class",
            ),
            Exchange(
                "Wonky. It leans like a tired tower, but I'm keeping it for Biscoito's treats.",
                "A wonky bowl with a purpose. I love it.",
            ),
            Exchange(
                "Work-wise, we finished the user interviews for Marés: twelve ferry "
                "commuters. Everyone hates queuing for tickets at Cais do Sodré.",
                "That's a clear pain point to design around. Mobile tickets first, then?",
                fact="user_interviews",
            ),
        ),
    ),
    SessionScript(
        "2025-02-03 13:15",
        (
            Exchange(
                "Took Biscoito to the Clínica Veterinária da Estrela this morning. He "
                "weighs 11.2 kg, got his vaccines and the microchip is registered to me now.",
                "Good, that's all the paperwork done. Was he brave?",
                fact="vet_visit",
            ),
            Exchange(
                "He shook the whole time, poor thing. Also, Inês and I decided: São Miguel, "
                "from 18 to 23 April.",
                "Six days on São Miguel in April, that's a proper holiday!",
                fact="trip_dates",
            ),
        ),
    ),
    SessionScript(
        "2025-02-07 18:20",
        (
            Exchange(
                "Bad news: the ferry operator moved their demo, so Rui moved our prototype "
                "deadline up to 24 February. We lose four days.",
                "Ouch. What can you cut or postpone to make the new date?",
                fact="project_deadline_moved",
            ),
            Exchange(
                "We'll drop the loyalty screens and keep booking, tickets and the timetable.",
                "Sounds like the right core. The operator will care most about booking.",
            ),
            Exchange(
                "On the bright side, I finished week three of the running plan.",
                "Halfway there! Are the longer runs feeling any easier?",
                fact="running_week3",
            ),
        ),
    ),
    SessionScript(
        "2025-02-10 20:05",
        (
            Exchange(
                "Flights booked! TAP from Lisbon to Ponta Delgada on 18 April at 07:40, "
                "back on 23 April. 142 euros each.",
                "Great price. Where are you staying?",
                fact="flights_booked",
            ),
            Exchange(
                "A guesthouse in Ponta Delgada called Casa das Hortênsias, five nights.",
                "Lovely name. Now you only need to plan the days.",
                fact="guesthouse",
            ),
        ),
    ),
    SessionScript(
        "2025-02-14 23:58",
        (
            Exchange(
                "I keep thinking about the demo. Ten days left and the booking flow still "
                "feels clunky.",
                "What part feels clunky to you?",
            ),
            Exchange(
                "Choosing the return trip. Too many taps. Maybe one screen for both legs?",
                "A single screen with outbound and return side by side could work.",
            ),
            Exchange(
                "Yes, I'll sketch that tomorrow. Meanwhile I've been doodling mug designs "
                "for ceramics class.",
                "Mugs next, after the bowl? That's progress.",
            ),
            Exchange(
                "Oh, it's past midnight already, Saturday now. This weekend I want to try "
                "baking pastéis de nata for the first time.",
                "Ambitious! Laminated dough takes patience. Good luck with it.",
                fact="nata_plan",
            ),
            Exchange(
                "Biscoito is snoring next to me. I'll take the hint. Goodnight, Mira!",
                "Goodnight, Ana. Sleep well, both of you.",
            ),
        ),
        closing=False,
    ),
    SessionScript(
        "2025-02-16 16:40",
        (
            Exchange(
                "The pastéis de nata were a disaster. I left them at 250 degrees too long "
                "and the bottoms burned black.",
                "Oh no. Was the custard at least good?",
                fact="nata_first_batch",
            ),
            Exchange(
                "The custard was fine! I'll try again next weekend with the tray on a higher rack.",
                "That should protect the bottoms. Second batches are usually better.",
            ),
        ),
        ended=False,
    ),
    SessionScript(
        "2025-02-25 19:30",
        (
            Exchange(
                "The Marés demo was yesterday and it went really well! The operator "
                "wants to launch in June.",
                "Congratulations! All that crunch paid off. Any feedback?",
                fact="demo_result",
            ),
            Exchange(
                "They asked for better accessibility: bigger buttons and proper screen "
                "reader support. That's our next sprint.",
                "A good ask, and the kind of work that helps every commuter.",
                fact="accessibility_request",
            ),
            Exchange(
                "And I brought a second batch of pastéis de nata to celebrate. Perfect "
                "this time, not a single burned one!",
                "Higher rack for the win! The team must have loved you.",
                fact="nata_second_batch",
            ),
        ),
    ),
    SessionScript(
        "2025-03-01 10:15",
        (
            Exchange(
                "I ran 5 km without stopping for the first time this morning! 34 minutes, "
                "from Belém towards Algés and back.",
                "That's a huge milestone. How do you feel?",
                fact="first_5k",
            ),
            Exchange(
                "Proud and a bit sore. I signed up for the Corrida das Descobertas, a 5 km "
                "race in Belém on 13 April.",
                "A race to aim for, perfect. Just before your Azores trip, too.",
                fact="race_signup",
            ),
            Exchange(
                "My right knee aches a little after long runs though.",
                "Worth watching. Old shoes are a common culprit, and yours met Biscoito.",
                fact="knee_ache",
            ),
        ),
    ),
    SessionScript(
        "2025-03-05 22:10",
        (
            Exchange(
                "I glazed a set of four mugs in a sea-green glaze tonight. Marta fires the "
                "kiln next week.",
                "Four matching mugs is a real step up from the wonky bowl! Any plans for them?",
                fact="mugs_glazed",
            ),
            Exchange(
                "They're a surprise for Inês. Her birthday is on 20 March.",
                "Handmade mugs for her birthday, she'll be thrilled.",
                fact="ines_birthday",
            ),
        ),
    ),
    SessionScript(
        "2025-03-11 12:30",
        (
            Exchange(
                "Biscoito started limping yesterday. The vet says he sprained his front "
                "left paw and needs ten days of rest, so no runs with me.",
                "Poor Biscoito. Is he in pain?",
                fact="dog_sprain",
            ),
            Exchange(
                "Not much, he mostly looks offended. It made me think about the trip: our "
                "neighbour Dona Lurdes from the second floor will look after him while "
                "I'm in the Azores.",
                "That's a relief. Does he know her already?",
                fact="dog_sitter",
            ),
            Exchange(
                "She gives him sardine skins over the fence, so he adores her.",
                "Then he'll barely notice you're gone!",
            ),
        ),
    ),
    SessionScript(
        "2025-03-17 20:45",
        (
            Exchange(
                "Bought new cushioned running shoes at the sports shop in Colombo and my "
                "knee already feels better.",
                "Great, so it was the shoes. Back on the Tuesday, Thursday, Saturday plan?",
                fact="new_shoes",
            ),
            Exchange(
                "Yes. And we planned the Azores days: Sete Cidades crater lakes hike on "
                "19 April, whale watching on the 20th, Furnas hot springs and cozido on "
                "the 21st.",
                "That's a beautiful itinerary. Cozido from the volcanic ground is a must.",
                fact="itinerary",
            ),
        ),
    ),
    SessionScript(
        "2025-03-21 09:00",
        (
            Exchange(
                "Inês loved the mugs! We celebrated her birthday last night with dinner "
                "and fado at a little place in Alfama.",
                "So the surprise worked. Fado for a birthday sounds special.",
                fact="birthday_dinner",
            ),
            Exchange(
                "Today we start screen reader testing for Marés with Paulo, a blind tester "
                "who commutes by ferry every day.",
                "Testing with a real commuter is the best way to get it right.",
                fact="accessibility_testing",
            ),
        ),
    ),
    SessionScript(
        "2025-04-01 18:50",
        (
            Exchange(
                "Still tired from the clocks going forward on Sunday. I lost an hour of "
                "sleep and Biscoito lost his breakfast schedule.",
                "Summer time is rough for a week. How is his paw?",
            ),
            Exchange(
                "Fully healed! He ran with me this morning. Twelve days to the race.",
                "Great news. Are you ready for the 13th?",
                fact="dog_recovered",
            ),
            Exchange(
                "I think so. Then the Azores five days later. I've started a packing list: "
                "hiking boots, swimsuit for Furnas, rain jacket.",
                "A rain jacket is wise, the islands change weather by the hour.",
            ),
        ),
    ),
)

SMALL_TALK = (
    Exchange(
        "It's pouring again in Lisbon, the 28 tram was packed.",
        "Rainy days and crowded trams, a Lisbon classic. Hope you stayed dry.",
    ),
    Exchange(
        "The sun finally came out over the river today.",
        "Nothing beats Lisbon light after a grey week.",
    ),
    Exchange(
        "I'm on my third coffee. Is that too many?",
        "Maybe switch to water for the next one.",
    ),
    Exchange(
        "Listening to an old Amália record while I work.",
        "Good choice. Fado and focus go well together.",
    ),
    Exchange(
        "The neighbour's cat sat on my windowsill and stared at Biscoito for an hour.",
        "A standoff through the glass! Who won?",
    ),
)

QUESTIONS = (
    Question("What is the name of Ana's dog?", "Biscoito, a beagle mix", ("dog_adopted",)),
    Question(
        "When and where did Ana adopt her dog?",
        "On 19 January 2025, from the Patas Amigas shelter in Sintra",
        ("dog_adopted",),
    ),
    Question(
        "When is the Marés prototype due?",
        "24 February 2025 (moved up from 28 February)",
        ("project_deadline_first", "project_deadline_moved"),
    ),
    Question(
        "When does Ana fly to the Azores, and with whom?",
        "On 18 April 2025 at 07:40 with TAP, together with Inês",
        ("trip_dates", "flights_booked"),
    ),
    Question("How much did Ana's flight to the Azores cost?", "142 euros", ("flights_booked",)),
    Question(
        "Who will look after Ana's dog during the Azores trip?",
        "Her neighbour Dona Lurdes",
        ("dog_sitter",),
    ),
    Question(
        "Why did Ana's first pastéis de nata fail, and did she succeed later?",
        "She left them at 250 degrees too long and the bottoms burned; the second batch, "
        "brought to the team after the demo, was perfect",
        ("nata_first_batch", "nata_second_batch"),
    ),
    Question(
        "How long did Ana's first non-stop 5 km run take?",
        "34 minutes, on 1 March 2025",
        ("first_5k",),
    ),
    Question(
        "What did Ana give her sister for her birthday?",
        "A set of four sea-green mugs she made in ceramics class",
        ("mugs_glazed", "ines_birthday", "birthday_dinner"),
    ),
    Question(
        "What was wrong with Ana's dog in March?",
        "A sprained front left paw, ten days of rest",
        ("dog_sprain",),
    ),
    Question(
        "What did the ferry operator ask for after the demo?",
        "Better accessibility: bigger buttons and screen reader support",
        ("accessibility_request",),
    ),
    Question(
        "Which race did Ana sign up for, and when is it?",
        "The Corrida das Descobertas, a 5 km race in Belém on 13 April 2025",
        ("race_signup",),
    ),
)

ANA = Persona(
    user_id="ana",
    name="Ana",
    tz="Europe/Lisbon",
    sessions=SESSIONS,
    small_talk=SMALL_TALK,
    questions=QUESTIONS,
)
