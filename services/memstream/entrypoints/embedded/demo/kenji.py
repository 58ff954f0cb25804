"""Kenji, a backend engineer in Tokyo: a calico cat, a service migration, a Sapporo trip.

His sessions run from 21 January to 28 March 2025 in Asia/Tokyo (+09:00, no summer time).
The Sapporo trip is planned, happens and is recalled inside the stream; one on-call night
crosses local midnight.
"""

from __future__ import annotations

from memstream.tools.demo.story import Exchange, Persona, Question, SessionScript

SESSIONS = (
    SessionScript(
        "2025-01-21 21:15",
        (
            Exchange(
                "New year, new project. At Hakobu we're migrating the warehouse routing "
                "service to the new event-driven platform. Go-live is planned for 14 March.",
                "That's a big one. Are you leading it?",
                fact="migration_plan",
            ),
            Exchange(
                "I'm the backend lead, with Aiko on the data side.",
                "A small team for a big migration. Let me know how it goes.",
                fact="team",
            ),
            Exchange(
                "Mochi, my cat, has decided my keyboard is her bed. She's a three-year-old "
                "calico and very opinionated.",
                "Calicos usually are! Maybe a warm cushion next to the keyboard would help.",
                fact="cat",
            ),
        ),
    ),
    SessionScript(
        "2025-01-24 22:30",
        (
            Exchange(
                "My friend Daiki and I are going to the Sapporo Snow Festival! 7 to 10 "
                "February, flying from Haneda.",
                "How fun! Where will you stay?",
                fact="sapporo_plan",
            ),
            Exchange(
                "A business hotel near Odori Park, so we can walk to the snow sculptures.",
                "Perfect location. Any food plans?",
            ),
            Exchange(
                "Soup curry and miso ramen. Daiki wants to try every crab place too.",
                "Sapporo is the right city for that list.",
                fact="sapporo_food",
            ),
        ),
    ),
    SessionScript(
        "2025-01-27 07:20",
        (
            Exchange(
                "I want to fix my sleep. New rule: in bed by 23:30, no phone in bed.",
                "A fixed bedtime is a good start. Where will the phone sleep?",
                fact="sleep_goal",
            ),
            Exchange(
                "In the kitchen, charging. I'm also swimming at the Setagaya ward pool on "
                "Mondays and Thursdays. I can do 600 m now, the goal is 1 km.",
                "Twice a week is a solid rhythm. You'll get to 1 km.",
                fact="swimming_plan",
            ),
        ),
    ),
    SessionScript(
        "2025-01-30 20:10",
        (
            Exchange(
                "I made tonkotsu broth from scratch: twelve hours of simmering pork bones. "
                "The whole apartment smells like a ramen shop.",
                "Dedication! Was it worth twelve hours?",
                fact="tonkotsu",
            ),
            Exchange(
                "Creamy and rich, totally worth it. Mochi sat by the stove all day.",
                "Of course she did. Did she get a taste?",
            ),
            Exchange(
                "No! Also, I'm stuck on the 5-kyu problems at Kabe Lab, the bouldering gym "
                "in Shibuya.",
                "Plateaus happen. Maybe work on footwork rather than strength.",
                fact="bouldering_start",
            ),
        ),
    ),
    SessionScript(
        "2025-02-03 19:45",
        (
            Exchange(
                "My sister Yui will stay at my place and look after Mochi while I'm in Sapporo.",
                "Great, Mochi stays at home. Does Yui know the routine?",
                fact="catsitter",
            ),
            Exchange(
                "I wrote it down: 40 g of dry food twice a day, water refilled every "
                "evening, and no tuna no matter how much she begs.",
                "Very clear instructions. Mochi will test them anyway.",
                fact="cat_feeding",
            ),
            Exchange(
                "Work is less calm. The load test failed at three times normal traffic. "
                "The database connection pool ran out.",
                "Good to find it now rather than after go-live. What's the plan?",
                fact="load_test",
            ),
        ),
    ),
    SessionScript(
        "2025-02-05 23:58",
        (
            Exchange(
                "I'm on call this week and got paged. The routing queue is backing up.",
                "That sounds stressful. Same problem as the load test?",
            ),
            Exchange(
                "Looks like it, connections again. Raising the pool size from 20 to 50.",
                "Fingers crossed. I'm here while it deploys.",
            ),
            Exchange(
                "Deployed. The queue is draining. It's past midnight now, there goes my "
                "23:30 bedtime.",
                "One night off the plan isn't failure. You fixed production.",
                fact="incident_fix",
            ),
            Exchange(
                "And I still haven't packed for Sapporo. The flight is on Friday.",
                "Pack tomorrow evening. Warm socks first.",
            ),
            Exchange(
                "Deal. Going to sleep now. Thanks for keeping me company, Mira.",
                "Goodnight, Kenji. Rest well.",
            ),
        ),
        closing=False,
    ),
    SessionScript(
        "2025-02-11 12:10",
        (
            Exchange(
                "Back from Sapporo! The snow sculptures at Odori Park were amazing, there "
                "was an ice castle taller than a house.",
                "Welcome back! What was the best part?",
                fact="sapporo_recap",
            ),
            Exchange(
                "The soup curry in Susukino. And Daiki slipping on the ice in front of a "
                "crowd, he took a bow.",
                "A graceful recovery! Did you bring anything back?",
            ),
            Exchange(
                "A wooden bear carving for Yui, as thanks for looking after Mochi.",
                "A thoughtful gift. How was Mochi?",
                fact="gift_for_yui",
            ),
            Exchange(
                "Yui says Mochi tried the tuna trick every day. It didn't work.",
                "Good for Yui, she followed the instructions.",
            ),
        ),
    ),
    SessionScript(
        "2025-02-15 10:30",
        (
            Exchange(
                "Took Mochi to Sakura Animal Hospital on Thursday. She weighs 4.8 kg and the "
                "vet wants her at 4.5 kg by May.",
                "So a gentle diet. Did the vet suggest special food?",
                fact="cat_weight_first",
            ),
            Exchange(
                "Yes, a lighter dry food and more play time. She's furious.",
                "Feather toys might win her back.",
            ),
            Exchange(
                "Also: I sent my first 4-kyu problem at Kabe Lab yesterday! The purple "
                "one on the overhang.",
                "Congratulations! So the footwork practice paid off.",
                fact="bouldering_4kyu",
            ),
        ),
    ),
    SessionScript(
        "2025-02-20 21:00",
        (
            Exchange(
                "I joined a book club. We're reading Kokoro by Natsume Soseki and meet on "
                "8 March at Café Tsubame in Shimokitazawa.",
                "A classic. How far along are you?",
                fact="book_club",
            ),
            Exchange(
                "Halfway. The letter part is coming, everyone says it's the heart of it.",
                "It is. Take your time with it.",
            ),
            Exchange(
                "Swimming update: 800 m tonight without stopping.",
                "200 m to go to your goal!",
                fact="swim_800",
            ),
        ),
        ended=False,
    ),
    SessionScript(
        "2025-02-25 20:20",
        (
            Exchange(
                "Gyoza party at my place with Daiki and Aiko. We folded 60 gyoza, pork and "
                "cabbage.",
                "Sixty! Whose folding was the neatest?",
                fact="gyoza_party",
            ),
            Exchange(
                "Aiko's, and her shiso version was everyone's favourite.",
                "Shiso gyoza sounds fresh. Worth repeating.",
            ),
            Exchange(
                "Work: code freeze for the migration is 7 March. One week of testing after that.",
                "A clear runway. How do you feel about it?",
                fact="code_freeze",
            ),
        ),
    ),
    SessionScript(
        "2025-03-02 15:00",
        (
            Exchange(
                "I'm organising a hanami picnic at Yoyogi Park on Saturday 5 April. About "
                "eight friends.",
                "Lovely! Will you need to reserve a spot early?",
                fact="hanami_plan",
            ),
            Exchange(
                "Daiki volunteered to go at six in the morning with a blue tarp.",
                "A true friend. Hopefully the blossoms cooperate.",
                fact="hanami_spot",
            ),
        ),
    ),
    SessionScript(
        "2025-03-08 18:40",
        (
            Exchange(
                "Book club today at Café Tsubame was great. We argued about Sensei for two "
                "hours. Next book is Kitchen by Banana Yoshimoto.",
                "A lighter book after Kokoro. Did anyone change your mind about Sensei?",
                fact="next_book",
            ),
            Exchange(
                "A bit. Also, sleep win: I was in bed by 23:30 five nights this week.",
                "That's real progress compared to January.",
                fact="sleep_progress",
            ),
        ),
    ),
    SessionScript(
        "2025-03-14 19:30",
        (
            Exchange(
                "We went live! The new routing service took traffic at 10:00 this morning.",
                "Congratulations! Any surprises?",
                fact="go_live",
            ),
            Exchange(
                "One feature flag for batch routes had to be rolled back, nothing serious. "
                "And p95 latency dropped from 480 ms to 120 ms.",
                "Four times faster. The connection pool work paid off too.",
                fact="latency",
            ),
            Exchange(
                "Aiko and I are taking Monday off to celebrate. Well, I'm swimming.",
                "A well-earned break.",
            ),
        ),
    ),
    SessionScript(
        "2025-03-18 07:10",
        (
            Exchange(
                "I swam 1 km yesterday for the first time! 31 minutes.",
                "You made your goal! That was 600 m in January.",
                fact="swim_1k",
            ),
            Exchange(
                "And Mochi is down to 4.6 kg. The feather toy is working.",
                "Only 100 g to the vet's target. Go Mochi.",
                fact="cat_weight_now",
            ),
        ),
    ),
    SessionScript(
        "2025-03-23 16:00",
        (
            Exchange(
                "I baked curry bread with my mother over a video call. She lives in "
                "Kanazawa and has a secret dough recipe.",
                "A family recipe over video, nice! How did it come out?",
                fact="curry_bread",
            ),
            Exchange(
                "Puffy and a bit oily, but good. I promised to visit my parents in "
                "Kanazawa over Golden Week, taking the Hokuriku shinkansen on 29 April.",
                "They must be happy about that. Booked yet?",
                fact="golden_week",
            ),
        ),
    ),
    SessionScript(
        "2025-03-28 21:30",
        (
            Exchange(
                "The forecast says the cherry blossoms will be at full bloom around the "
                "picnic. I'm making gyoza and Aiko brings onigiri.",
                "Timing looks perfect. How many are coming now?",
                fact="hanami_food",
            ),
            Exchange(
                "Ten, two more joined. Daiki still has the tarp job.",
                "Ten people under the blossoms. It will be a great day.",
            ),
            Exchange(
                "We also had the migration retrospective today. The team wants to write "
                "down the connection pool lesson for the next service.",
                "Writing it down means nobody gets paged for it again.",
            ),
        ),
    ),
)

SMALL_TALK = (
    Exchange(
        "It's freezing this morning, I saw frost on the bicycles.",
        "Tokyo winter mornings can bite. Warm drink?",
    ),
    Exchange(
        "The Odakyu line was delayed again.",
        "Ugh, I hope you weren't late.",
    ),
    Exchange(
        "I found a new coffee stand near Shimokitazawa station.",
        "Good coffee nearby changes everything.",
    ),
    Exchange(
        "Mochi just knocked a pen off my desk while staring at me.",
        "Classic cat behaviour. She wants attention.",
    ),
    Exchange(
        "Clear sky today, I could see Mount Fuji from the office.",
        "Lucky! Those days are the best part of winter.",
    ),
)

QUESTIONS = (
    Question("What is Kenji's cat called?", "Mochi, a three-year-old calico", ("cat",)),
    Question(
        "When did Kenji go to Sapporo, and with whom?",
        "7 to 10 February 2025, with his friend Daiki",
        ("sapporo_plan",),
    ),
    Question(
        "Who looked after Kenji's cat during the Sapporo trip?",
        "His sister Yui",
        ("catsitter",),
    ),
    Question(
        "What did Kenji bring back from Sapporo, and for whom?",
        "A wooden bear carving for his sister Yui, as thanks for looking after Mochi",
        ("gift_for_yui", "catsitter"),
    ),
    Question(
        "How did Kenji fix the on-call incident?",
        "He raised the database connection pool size from 20 to 50",
        ("incident_fix",),
    ),
    Question(
        "When did the routing service migration go live, and how did latency change?",
        "On 14 March 2025 at 10:00; p95 latency dropped from 480 ms to 120 ms",
        ("go_live", "latency"),
    ),
    Question(
        "How much does Kenji's cat weigh now, and what is the vet's target?",
        "4.6 kg in mid-March (down from 4.8 kg); the target is 4.5 kg by May",
        ("cat_weight_first", "cat_weight_now"),
    ),
    Question(
        "What is the book club reading after Kokoro?",
        "Kitchen by Banana Yoshimoto",
        ("next_book",),
    ),
    Question(
        "Where and when is Kenji's hanami picnic?",
        "At Yoyogi Park on Saturday 5 April 2025",
        ("hanami_plan",),
    ),
    Question(
        "When did Kenji first swim 1 km, and how long did it take?",
        "On Monday 17 March 2025, in 31 minutes",
        ("swim_1k",),
    ),
    Question(
        "What was Kenji's bedtime goal, and how did it go?",
        "In bed by 23:30; by early March he managed it five nights a week",
        ("sleep_goal", "sleep_progress"),
    ),
)

KENJI = Persona(
    user_id="kenji",
    name="Kenji",
    tz="Asia/Tokyo",
    sessions=SESSIONS,
    small_talk=SMALL_TALK,
    questions=QUESTIONS,
)
