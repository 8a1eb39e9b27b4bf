"""Write SYNTHETIC PersonalRewardBench-style preference pairs for a handful of sample users.

Each sample user has one hidden, consistent preference along one or two style dimensions (length, format, tone,
example, ordering). For every pair the chosen response satisfies that preference and the rejected one violates it;
every other dimension is drawn at random, independently for the two responses, so only the user's own dimension
separates them consistently. Responses are assembled from hand-written content about everyday topics.

Standard library only, no LLM, no network. The same seed always produces byte-identical output:

    python3 scripts/generate_sample_users.py   # seed 0 -> prefcraft/data/sample_users/sample_users.jsonl
    python3 scripts/generate_sample_users.py --seed 1 --output /tmp/other.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "prefcraft" / "data" / "sample_users" / "sample_users.jsonl"

PAIRS_PER_USER = 16
SPLIT_SIZES = (("train", 8), ("val", 4), ("test", 4))
MULTI_TURN_PER_USER = 4
ROW_TYPE = "synthetic"

# Style dimension -> its two poles.
DIMENSIONS: dict[str, tuple[str, str]] = {
    "length": ("short", "long"),
    "format": ("bullets", "prose"),
    "tone": ("formal", "casual"),
    "example": ("with_example", "no_example"),
    "order": ("answer_first", "background_first"),
}

Style = dict[str, str]


@dataclass(frozen=True)
class Topic:
    """Hand-written content for one everyday question, from which every response variant is rendered."""

    area: str
    question: str
    background: str
    core: str
    detail: tuple[str, ...]
    steps: tuple[str, str, str]
    example: str


@dataclass(frozen=True)
class User:
    """A sample user: the poles they prefer (one or two dimensions) and that rule in one sentence."""

    user_id: str
    preferences: dict[str, str]
    latent_preference: str


TOPICS: tuple[Topic, ...] = (
    Topic(
        area="cooking rice",
        question="How do I cook fluffy rice on the stove?",
        background="Rice turns gummy when there is too much loose starch or too much water in the pot.",
        core="Rinse the rice, cook it in about one and a half parts water to one part rice, and let it rest covered "
        "before fluffing.",
        detail=(
            "Rinsing removes the surface starch that makes the grains stick together.",
            "Resting off the heat lets the steam finish cooking the grains evenly, so do not lift the lid early.",
        ),
        steps=(
            "rinse the rice in cold water until it runs mostly clear",
            "simmer it covered on low heat for about 15 minutes",
            "let it rest covered for 10 minutes, then fluff it with a fork",
        ),
        example="one cup of long-grain rice with one and a half cups of water makes three side servings.",
    ),
    Topic(
        area="budgeting",
        question="How can I start a monthly budget?",
        background="Most budgets fail because they are based on guesses rather than on what you actually spend.",
        core="Track one month of real spending, then give every dollar of your income a job before the next month "
        "starts.",
        detail=(
            "Splitting spending into needs, wants and savings makes the plan easy to check.",
            "It is normal to adjust the categories during the first two or three months.",
        ),
        steps=(
            "list your take-home income and your fixed bills",
            "set a limit for each flexible category such as groceries",
            "compare your actual spending with the plan at the end of each week",
        ),
        example="with 3,000 dollars of take-home pay you might plan 1,500 for needs, 900 for wants and 600 for "
        "savings.",
    ),
    Topic(
        area="sleeping better",
        question="How can I fall asleep more easily at night?",
        background="Your body clock relies on regular cues such as light, meal times and a consistent schedule.",
        core="Keep a fixed wake-up time, dim the lights and screens an hour before bed, and keep the bedroom cool "
        "and dark.",
        detail=(
            "A consistent wake-up time anchors your body clock more than a consistent bedtime does.",
            "If you cannot sleep after about 20 minutes, get up and do something calm until you feel drowsy.",
        ),
        steps=(
            "pick a wake-up time and keep it on weekends too",
            "stop drinking caffeine after early afternoon",
            "start a short wind-down routine at the same time each night",
        ),
        example="if you wake at 7:00, you could switch off screens at 22:00 and read a paper book until you feel "
        "sleepy.",
    ),
    Topic(
        area="learning a new language",
        question="What is the best way to learn a new language as an adult?",
        background="Adults learn languages well when they get plenty of understandable input and regular practice "
        "recalling words.",
        core="Study a little every day, combine spaced-repetition vocabulary with listening to material you mostly "
        "understand, and start speaking early.",
        detail=(
            "Short daily sessions beat long weekly ones because memory depends on repeated recall.",
            "Speaking early feels uncomfortable, but it shows you which words you are missing.",
        ),
        steps=(
            "learn the 500 most common words with a flashcard app",
            "listen to a beginner podcast for 15 minutes a day",
            "book a weekly conversation with a tutor or a language partner",
        ),
        example="a learner of Spanish might review 20 flashcards over breakfast, listen to a podcast on the commute "
        "and talk with a tutor every Saturday.",
    ),
    Topic(
        area="using git",
        question="How do I undo my last git commit?",
        background="Git keeps every commit, so undoing one means either moving your branch back or adding a new "
        "commit that reverses it.",
        core="If you have not pushed yet, run `git reset --soft HEAD~1` to undo the commit but keep your changes; "
        "if you have pushed, use `git revert HEAD` instead.",
        detail=(
            "A soft reset leaves your changes staged, so you can fix them and commit again.",
            "Reverting is safer on shared branches because it does not rewrite history that others may have pulled.",
        ),
        steps=(
            "check the last commit with `git log --oneline -1`",
            "run `git reset --soft HEAD~1` if the commit is only local",
            "run `git revert HEAD` and push if the commit is already shared",
        ),
        example="if you committed a debug print by mistake, a soft reset lets you delete that line and commit the "
        "clean version.",
    ),
    Topic(
        area="houseplants",
        question="How often should I water my houseplants?",
        background="Most houseplants die from overwatering, because roots that sit in wet soil cannot get air.",
        core="Water when the top two or three centimetres of soil are dry, rather than on a fixed schedule.",
        detail=(
            "Plants use less water in winter and in low light, so the gap between waterings grows.",
            "Pots with drainage holes make overwatering much less likely.",
        ),
        steps=(
            "push a finger into the soil to check the moisture",
            "water slowly until it drains from the bottom of the pot",
            "empty the saucer after 15 minutes",
        ),
        example="a pothos in a bright room might need water every week in summer but only every two or three weeks "
        "in winter.",
    ),
    Topic(
        area="running",
        question="How should I start running as a beginner?",
        background="New runners often get hurt because their heart and lungs adapt faster than their joints and "
        "tendons.",
        core="Start with run-walk intervals three times a week at an easy, conversational pace, and increase the "
        "total time slowly.",
        detail=(
            "An easy pace means you can still speak in full sentences while running.",
            "Adding no more than about ten percent to your weekly running time is a common way to avoid injury.",
        ),
        steps=(
            "alternate one minute of running with two minutes of walking for 20 minutes",
            "add a little more running to each interval every week",
            "take a rest day between runs",
        ),
        example="a first week could be three sessions of one minute running and two minutes walking, repeated seven "
        "times.",
    ),
    Topic(
        area="email etiquette",
        question="How should I write a polite follow-up email?",
        background="People often miss emails simply because their inbox is busy, not because they are ignoring you.",
        core="Keep it short, restate your original request in one line, and suggest a clear next step or deadline.",
        detail=(
            "Replying in the same thread gives the reader the earlier context without extra effort.",
            "Waiting three to five working days before following up is usually considered polite.",
        ),
        steps=(
            "reply in the original thread",
            "summarize your request in one sentence",
            "close with a specific question or a proposed date",
        ),
        example="you could write 'Just following up on the budget draft below. Could you share your comments by "
        "Thursday?'",
    ),
    Topic(
        area="meal prep",
        question="How do I meal prep for the week?",
        background="Meal prep saves time because cooking several portions at once takes little more effort than "
        "cooking one.",
        core="Pick two or three recipes, cook them in bulk on one day, and store them in portioned containers in the "
        "fridge or freezer.",
        detail=(
            "Cooked food generally keeps for three to four days in the fridge, so freeze the portions for later in "
            "the week.",
            "Combining one grain, one protein and a few vegetables keeps the meals varied without much work.",
        ),
        steps=(
            "plan the recipes and write a shopping list",
            "cook the grains, proteins and vegetables in batches",
            "portion everything into labelled containers",
        ),
        example="a Sunday batch of chicken, roasted vegetables and rice can become burrito bowls on Monday and a "
        "stir-fry on Wednesday.",
    ),
    Topic(
        area="saving money",
        question="How much should I keep in an emergency fund?",
        background="An emergency fund exists so that a surprise bill or a job loss does not push you into expensive "
        "debt.",
        core="Aim for three to six months of essential expenses, kept in an easy-access savings account.",
        detail=(
            "Essential expenses means rent, food, utilities, insurance and minimum debt payments, not all of your "
            "spending.",
            "If your income is irregular, it is wise to aim for the higher end of that range.",
        ),
        steps=(
            "add up one month of essential costs",
            "set up an automatic transfer on payday",
            "keep the money in a separate account that you do not use for spending",
        ),
        example="if your essentials cost 2,000 dollars a month, a target of 6,000 to 12,000 dollars would be "
        "reasonable.",
    ),
    Topic(
        area="working from home",
        question="How can I stay focused while working from home?",
        background="At home, work and rest happen in the same place, so your brain gets few signals that it is time "
        "to concentrate.",
        core="Work in fixed, timed blocks at a dedicated spot, and keep your phone out of reach during each block.",
        detail=(
            "Timed blocks of 25 or 50 minutes make starting easier because the end is always in sight.",
            "A short start-of-day ritual, like making coffee and writing a to-do list, helps you switch into work "
            "mode.",
        ),
        steps=(
            "choose one spot that you only use for work",
            "set a timer for a focused block",
            "take a short break away from the screen when it rings",
        ),
        example="you might do three 50-minute blocks in the morning, each followed by a 10-minute walk or stretch.",
    ),
    Topic(
        area="public speaking",
        question="How can I feel less nervous before giving a presentation?",
        background="Nervousness before speaking is a normal stress response, and it usually fades after the first "
        "minute.",
        core="Rehearse your opening until you know it by heart, practise the whole talk out loud a few times, and "
        "breathe slowly just before you start.",
        detail=(
            "Knowing the first minute well carries you through the moment when nerves are strongest.",
            "Breathing out for longer than you breathe in calms the body's stress response.",
        ),
        steps=(
            "write out and memorize your first three sentences",
            "rehearse the full talk out loud at least three times",
            "breathe in for four counts and out for six before you begin",
        ),
        example="you could rehearse a ten-minute talk once alone, once in front of a friend and once while recording "
        "yourself.",
    ),
    Topic(
        area="online security",
        question="How do I create strong passwords I can remember?",
        background="Attackers guess passwords with huge lists of common words and patterns, so length matters more "
        "than clever symbols.",
        core="Use a password manager for most accounts, and a long passphrase of four or more random words for the "
        "few passwords you must remember.",
        detail=(
            "A password manager lets every account have a unique password, so one leak does not expose the others.",
            "Turning on two-factor authentication adds protection even if a password is stolen.",
        ),
        steps=(
            "install a reputable password manager",
            "create a long passphrase for the manager itself",
            "enable two-factor authentication on your email and banking accounts",
        ),
        example="a passphrase like 'copper-lantern-river-biscuit' is far stronger than 'P@ssw0rd1' and easier to "
        "remember.",
    ),
    Topic(
        area="decluttering",
        question="How do I start decluttering my apartment?",
        background="Decluttering feels overwhelming when you try to tackle the whole home at once.",
        core="Start with one small area, sort everything into keep, donate and discard, and finish that area before "
        "moving on.",
        detail=(
            "Small wins, such as one clear drawer, build momentum for larger rooms.",
            "Taking the donation bag out of the house the same day stops items from creeping back.",
        ),
        steps=(
            "pick one drawer or shelf",
            "sort each item into keep, donate or discard",
            "take the donate and discard bags out right away",
        ),
        example="you could start with the kitchen junk drawer, which usually takes less than 20 minutes.",
    ),
    Topic(
        area="making coffee",
        question="How do I make better coffee with a French press?",
        background="French press coffee tastes bitter or muddy when the grind is too fine or the coffee steeps too "
        "long.",
        core="Use a coarse grind, about one gram of coffee per 15 grams of water just off the boil, and steep for "
        "four minutes before pressing.",
        detail=(
            "A coarse grind keeps sediment out of the cup and slows extraction.",
            "Pouring the coffee out right after pressing stops it from steeping further and turning bitter.",
        ),
        steps=(
            "grind the beans coarsely",
            "pour in the hot water, stir and wait four minutes",
            "press slowly and serve immediately",
        ),
        example="for 500 millilitres of water, use about 33 grams of coffee, roughly five tablespoons.",
    ),
    Topic(
        area="bike maintenance",
        question="How do I fix a flat bicycle tire?",
        background="Most flats come from a small puncture in the inner tube, which sits inside the tire.",
        core="Remove the wheel, take out the inner tube, patch the hole or replace the tube, and pump it back up to "
        "the pressure printed on the tire.",
        detail=(
            "Before refitting the tube, run your fingers around the inside of the tire to find the thorn or glass "
            "that caused the puncture.",
            "Replacing the tube is faster on the road, while patching is cheaper at home.",
        ),
        steps=(
            "lever one side of the tire off the rim",
            "patch or swap the inner tube",
            "refit the tire and inflate it to the marked pressure",
        ),
        example="if the tire sidewall says 50 to 70 psi, pumping it to about 60 psi is a sensible middle.",
    ),
    Topic(
        area="job hunting",
        question="How should I prepare for a job interview?",
        background="Interviewers mostly want evidence that you can do the job and that you will work well with the "
        "team.",
        core="Research the company, prepare short stories about your past work that match the job description, and "
        "have a few questions ready to ask.",
        detail=(
            "Structuring each story as situation, action and result keeps your answers focused.",
            "Practising your answers out loud is more useful than reading them silently.",
        ),
        steps=(
            "read the job description and mark the key skills",
            "write one short story for each skill",
            "prepare two or three questions about the team or the role",
        ),
        example="for a skill like 'handling deadlines', you could describe the week you delivered a report early by "
        "splitting it into daily tasks.",
    ),
    Topic(
        area="desk ergonomics",
        question="How can I reduce back stiffness from sitting at a desk?",
        background="Sitting in one position for hours makes muscles and joints stiff, whatever your posture.",
        core="Set up your chair and screen so you can sit upright comfortably, and stand up and move for a minute or "
        "two every half hour.",
        detail=(
            "The top of the screen should be at roughly eye level so that you are not leaning forward.",
            "Regular movement matters more than finding one perfect posture.",
        ),
        steps=(
            "raise the screen to eye level",
            "set a reminder to stand up every 30 minutes",
            "do a few gentle back stretches at lunch",
        ),
        example="a stack of books under a laptop plus a separate keyboard can bring the screen to eye level cheaply.",
    ),
    Topic(
        area="reading more",
        question="How can I build a habit of reading more books?",
        background="Habits stick best when they are attached to something you already do every day.",
        core="Read a small, fixed amount at the same moment each day, and keep your current book within reach.",
        detail=(
            "A tiny goal like ten pages is easy to keep on busy days, and you will often read more than that.",
            "It is fine to abandon a book you are not enjoying, because that keeps the habit alive.",
        ),
        steps=(
            "choose a daily trigger such as your morning coffee",
            "set a goal of ten pages",
            "keep the book or an e-reader in your bag",
        ),
        example="ten pages a day adds up to roughly a dozen average-length books in a year.",
    ),
    Topic(
        area="cast-iron cookware",
        question="How do I clean a cast-iron pan?",
        background="Cast iron is protected by a thin layer of baked-on oil, called seasoning, which soaking and harsh "
        "scrubbing can strip away.",
        core="Clean it while it is warm with hot water and a brush, dry it completely on the stove, and wipe on a thin "
        "layer of oil.",
        detail=(
            "A little dish soap is fine, but do not leave the pan soaking in water.",
            "Heating it dry after washing stops rust from forming overnight.",
        ),
        steps=(
            "scrub the warm pan with hot water and a brush",
            "dry it over low heat for a few minutes",
            "rub in a few drops of oil with a paper towel",
        ),
        example="stuck-on egg usually lifts off with a tablespoon of coarse salt used as a scrub.",
    ),
    Topic(
        area="spreadsheets",
        question="How do I add up a column in a spreadsheet?",
        background="Spreadsheets recalculate formulas automatically, so a formula is more reliable than adding the "
        "numbers by hand.",
        core="Click the cell below the column, type a SUM formula with the range, such as `=SUM(B2:B20)`, and press "
        "Enter.",
        detail=(
            "The range tells the spreadsheet which cells to include, from the first cell to the last.",
            "Most spreadsheet apps also have an AutoSum button that writes the formula for you.",
        ),
        steps=(
            "select the empty cell under the numbers",
            "type the SUM formula with the cell range",
            "press Enter and check that the total looks right",
        ),
        example="if your monthly costs are in cells C2 to C13, `=SUM(C2:C13)` gives the yearly total.",
    ),
    Topic(
        area="travelling",
        question="How do I pack light for a week-long trip?",
        background="Most travellers overpack because they plan an outfit for every possible situation.",
        core="Pack clothes for about four days in colours that mix and match, and plan to do laundry once during the "
        "trip.",
        detail=(
            "Choosing one neutral colour palette means every top works with every bottom.",
            "Wearing your bulkiest shoes and jacket on the journey frees up space in the bag.",
        ),
        steps=(
            "lay out everything you think you need",
            "remove anything that only goes with one outfit",
            "roll the clothes and use packing cubes",
        ),
        example="two pairs of trousers, four shirts and one sweater in navy, grey and white can make more than eight "
        "outfits.",
    ),
    Topic(
        area="staying hydrated",
        question="How much water should I drink each day?",
        background="Your water needs depend on your body size, activity level and the weather, and food also provides "
        "some water.",
        core="For most healthy adults, drinking when you are thirsty and aiming for pale yellow urine is a reliable "
        "guide.",
        detail=(
            "General guidelines suggest roughly two to three litres of total fluid a day, including water from food.",
            "You will need more during exercise, hot weather or illness, and people with some medical conditions "
            "should follow their doctor's advice.",
        ),
        steps=(
            "keep a refillable bottle nearby",
            "drink a glass of water with each meal",
            "drink extra before and after exercise",
        ),
        example="someone who runs for an hour on a hot day might need an extra half litre to a litre of water.",
    ),
    Topic(
        area="baking bread",
        question="How do I know when bread dough has risen enough?",
        background="Rising times in recipes are only estimates, because yeast works faster in a warm kitchen and "
        "slower in a cool one.",
        core="Use the poke test: press a floured finger into the dough, and if the dent springs back slowly and only "
        "partly, it is ready.",
        detail=(
            "If the dent springs back immediately, the dough needs more time.",
            "If it does not spring back at all, the dough has over-proofed, so shape and bake it soon.",
        ),
        steps=(
            "let the dough rise until it has roughly doubled",
            "poke it gently with a floured finger",
            "bake it when the dent fills back in slowly",
        ),
        example="in a kitchen at about 20 degrees Celsius, a basic loaf often needs around 90 minutes for its first "
        "rise.",
    ),
    Topic(
        area="programming in Python",
        question="How do I create a Python virtual environment?",
        background="A virtual environment gives each project its own set of packages, so projects do not break each "
        "other.",
        core="Run `python -m venv .venv` in your project folder, activate it, and install packages with pip while it "
        "is active.",
        detail=(
            "On macOS and Linux you activate it with `source .venv/bin/activate`, and on Windows with "
            "`.venv\\Scripts\\activate`.",
            "Adding `.venv` to your `.gitignore` keeps it out of version control.",
        ),
        steps=(
            "create the environment with `python -m venv .venv`",
            "activate it in your shell",
            "install packages with `pip install`",
        ),
        example="after activating it, `pip install requests` installs the package for that project only.",
    ),
    Topic(
        area="composting",
        question="How do I start composting at home?",
        background="Compost forms when microbes break down a mix of wet green scraps and dry brown material.",
        core="Collect green scraps and brown material in a bin, keep it as damp as a wrung-out sponge, and turn it "
        "every week or two.",
        detail=(
            "Roughly two or three parts brown material to one part green keeps the heap from smelling.",
            "Meat, dairy and oily food attract pests, so do not add them to a home bin.",
        ),
        steps=(
            "set up a bin in a shady spot",
            "add a handful of dry leaves or cardboard with each load of vegetable scraps",
            "turn the heap with a garden fork every week or two",
        ),
        example="coffee grounds and vegetable peels mixed with shredded cardboard boxes make a good starter mix.",
    ),
)

USERS: tuple[User, ...] = (
    User(
        "sample_user_01",
        {"length": "short"},
        "Prefers short answers: the direct answer in a sentence or two, without extra detail or step lists.",
    ),
    User(
        "sample_user_02",
        {"length": "long"},
        "Prefers long, detailed answers with background, explanation and step-by-step instructions.",
    ),
    User(
        "sample_user_03",
        {"format": "bullets"},
        "Prefers answers formatted as bullet-point lists rather than paragraphs.",
    ),
    User(
        "sample_user_04",
        {"format": "prose"},
        "Prefers answers written as flowing prose paragraphs, with no bullet points.",
    ),
    User(
        "sample_user_05",
        {"tone": "formal"},
        "Prefers a formal, neutral tone without contractions, exclamations or chatty openers.",
    ),
    User(
        "sample_user_06",
        {"tone": "casual"},
        "Prefers a casual, friendly tone with contractions and a warm, chatty opener.",
    ),
    User(
        "sample_user_07",
        {"example": "with_example"},
        "Prefers answers that include a concrete example ('For example, ...').",
    ),
    User(
        "sample_user_08",
        {"example": "no_example"},
        "Prefers answers that give only the general advice, with no worked example.",
    ),
    User(
        "sample_user_09",
        {"order": "answer_first"},
        "Prefers the direct answer first, with any background or explanation after it.",
    ),
    User(
        "sample_user_10",
        {"order": "background_first"},
        "Prefers background and context first, building up to the answer.",
    ),
    User(
        "sample_user_11",
        {"length": "short", "format": "bullets"},
        "Prefers short answers formatted as bullet points (both matter).",
    ),
    User(
        "sample_user_12",
        {"length": "long", "format": "prose"},
        "Prefers long, detailed answers written as flowing prose paragraphs (both matter).",
    ),
)

CASUAL_OPENERS = (
    "Good question!",
    "Oh, happy to help with this!",
    "Sure thing!",
    "Ooh, I love this one!",
    "Great question, let's sort it out!",
)
CASUAL_CLOSERS = ("Hope that helps!", "You've got this!", "Have fun with it!", "Good luck, you'll do great!")
FORMAL_OPENERS = ("Certainly.", "Of course.", "")
STEP_CONNECTORS = {"formal": ("First, ", "Next, ", "Finally, "), "casual": ("First, ", "Then ", "And finally, ")}
# (first user turn, assistant reply) for multi-turn conversations; the user's question follows.
CONTEXT_EXCHANGES = (
    ("I have a question about {area}.", "Of course. What would you like to know?"),
    ("Can I ask you something about {area}?", "Sure, go ahead and ask."),
    ("I've been thinking about {area} lately.", "Happy to help. What is on your mind?"),
)
CONTRACTIONS = (
    ("do not", "don't"),
    ("does not", "doesn't"),
    ("did not", "didn't"),
    ("is not", "isn't"),
    ("are not", "aren't"),
    ("cannot", "can't"),
    ("will not", "won't"),
    ("have not", "haven't"),
    ("it is", "it's"),
    ("that is", "that's"),
    ("there is", "there's"),
    ("you are", "you're"),
    ("you will", "you'll"),
    ("you would", "you'd"),
    ("they are", "they're"),
    ("what is", "what's"),
)


def opposite(dimension: str, pole: str) -> str:
    """The other pole of `dimension`."""
    first, second = DIMENSIONS[dimension]
    return second if pole == first else first


def random_style(rng: random.Random) -> Style:
    """One pole per dimension, each drawn independently."""
    return {dimension: rng.choice(poles) for dimension, poles in DIMENSIONS.items()}


def chosen_style(user: User, rng: random.Random) -> Style:
    """A style that satisfies every preference of `user`; the other dimensions are random."""
    return random_style(rng) | user.preferences


def rejected_style(user: User, rng: random.Random) -> Style:
    """A style that violates the user's preference (one or, for a two-dimension user, one or both dimensions)."""
    dimensions = sorted(user.preferences)
    if len(dimensions) == 1:
        violated = dimensions
    else:
        violated = rng.choice([[dimensions[0]], [dimensions[1]], dimensions])
    style = random_style(rng) | user.preferences
    for dimension in violated:
        style[dimension] = opposite(dimension, user.preferences[dimension])
    return style


def lead_sentences(topic: Topic, style: Style) -> list[str]:
    """The explanatory sentences in the order the style asks for; detail only appears in long answers."""
    detail = list(topic.detail) if style["length"] == "long" else []
    if style["order"] == "answer_first":
        return [topic.core, topic.background, *detail]
    return [topic.background, *detail, topic.core]


def step_sentences(topic: Topic, style: Style) -> list[str]:
    """The three steps as full sentences (long answers only)."""
    if style["length"] == "short":
        return []
    return [f"{step[0].upper()}{step[1:]}." for step in topic.steps]


def example_sentence(topic: Topic, style: Style) -> str | None:
    return f"For example, {topic.example}" if style["example"] == "with_example" else None


def render_bullets(lead: list[str], steps: list[str], example: str | None, opener: str, closer: str) -> str:
    items = [*lead, *steps, *([example] if example else [])]
    lines = ([opener] if opener else []) + [f"- {item}" for item in items] + ([closer] if closer else [])
    return "\n".join(lines)


def render_prose(
    lead: list[str], steps: list[str], example: str | None, opener: str, closer: str, connectors: Sequence[str]
) -> str:
    paragraphs = [" ".join(([opener] if opener else []) + lead)]
    if steps:
        joined = (f"{word}{step[0].lower()}{step[1:]}" for word, step in zip(connectors, steps, strict=True))
        paragraphs.append(" ".join(joined))
    if example:
        paragraphs[-1] += f" {example}"
    if closer:
        paragraphs[-1] += f" {closer}"
    return "\n\n".join(paragraphs)


def contract(text: str) -> str:
    """Casual wording: replace full forms with contractions, keeping a leading capital."""
    for full, short in CONTRACTIONS:
        pattern = re.compile(rf"\b{full}\b", re.IGNORECASE)
        text = pattern.sub(
            lambda match, short=short: short.capitalize() if match.group(0)[0].isupper() else short, text
        )
    return text


def render_response(topic: Topic, style: Style, rng: random.Random) -> str:
    """Render one response variant of `topic` in `style`."""
    casual = style["tone"] == "casual"
    opener = rng.choice(CASUAL_OPENERS) if casual else rng.choice(FORMAL_OPENERS)
    closer = rng.choice((*CASUAL_CLOSERS, "")) if casual else ""
    lead, steps, example = lead_sentences(topic, style), step_sentences(topic, style), example_sentence(topic, style)
    if style["format"] == "bullets":
        text = render_bullets(lead, steps, example, opener, closer)
    else:
        text = render_prose(lead, steps, example, opener, closer, STEP_CONNECTORS[style["tone"]])
    return contract(text) if casual else text


def build_context(topic: Topic, multi_turn: bool, rng: random.Random) -> list[dict[str, str]]:
    """The conversation so far, ending with the user's question (user, assistant, user when multi-turn)."""
    question = {"role": "user", "content": topic.question}
    if not multi_turn:
        return [question]
    opener, reply = rng.choice(CONTEXT_EXCHANGES)
    return [
        {"role": "user", "content": opener.format(area=topic.area)},
        {"role": "assistant", "content": reply},
        question,
    ]


def split_names() -> list[str]:
    """The split of each of a user's rows, in row order (train, then val, then test)."""
    return [name for name, size in SPLIT_SIZES for _ in range(size)]


def build_pair(
    user: User, index: int, split: str, topic: Topic, multi_turn: bool, rng: random.Random
) -> dict[str, Any]:
    """One PersonalRewardBench row: the user prefers `chosen` over `rejected` for this conversation."""
    context = build_context(topic, multi_turn, rng)
    chosen = render_response(topic, chosen_style(user, rng), rng)
    rejected = render_response(topic, rejected_style(user, rng), rng)
    if chosen == rejected:
        raise RuntimeError(f"{user.user_id} pair {index}: chosen and rejected render identically")
    return {
        "user_id": user.user_id,
        "split": split,
        "conversation_id": f"{user.user_id}_conv_{index:02d}",
        "context": context,
        "chosen": {"role": "model", "content": chosen},
        "rejected": {"role": "model", "content": rejected},
        "turns": sum(1 for message in context if message["role"] == "user"),
        "type": ROW_TYPE,
        "flip": rng.random() < 0.5,
        "latent_preference": user.latent_preference,
    }


def build_user_rows(user: User, rng: random.Random) -> list[dict[str, Any]]:
    """All of one user's pairs, each on a different topic, in split order."""
    topics = rng.sample(TOPICS, PAIRS_PER_USER)
    multi_turn = set(rng.sample(range(PAIRS_PER_USER), MULTI_TURN_PER_USER))
    return [
        build_pair(user, index, split, topic, index in multi_turn, rng)
        for index, (split, topic) in enumerate(zip(split_names(), topics, strict=True))
    ]


def build_rows(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [row for user in USERS for row in build_user_rows(user, rng)]


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help="JSONL file to write (default: prefcraft/data/sample_users/sample_users.jsonl)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    rows = build_rows(args.seed)
    write_jsonl(rows, args.output)
    print(f"wrote {len(rows)} rows for {len(USERS)} users to {args.output}")


if __name__ == "__main__":
    main()
