"""Write SYNTHETIC CUPID instances (seeds/001 schema) for offline tests and demos.

Each persona has a current context factor with a contextual preference, a contrasting factor whose preference
contradicts it, a changed preference for the current factor, and distractor factors from a shared pool. A session is a
short dialogue: the user's request names the factor; the assistant's first answer misses the preference; the user's
feedback hints at one checklist item at a time, indirectly (what was wrong, not the rule); the assistant revises; the
user ends satisfied. Each persona yields three instances with the same current request and 8 prior sessions:
- consistent: two sessions with the current factor and preference, six distractor sessions;
- contrastive: the same, plus two sessions with the contrasting factor (opposite preference) instead of two
  distractors;
- changing: two early sessions with the current factor and its old preference, two late ones with the changed
  preference (the gold), four distractor sessions.

Standard library only, no LLM, no network. The same seed always produces byte-identical output:

    .venv/bin/python -m prefcraft.components.cupid.generate   # seed 0 -> sample/cupid_sample.jsonl beside it
    .venv/bin/python -m prefcraft.components.cupid.generate --seed 1 --output /tmp/other.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "sample" / "cupid_sample.jsonl"
SESSIONS_PER_INSTANCE = 8


@dataclass(frozen=True)
class Preference:
    text: str
    checklist: tuple[str, ...]
    feedback: tuple[str, ...]
    """One indirect hint per checklist item, in the same order."""


@dataclass(frozen=True)
class Factor:
    name: str
    requests: tuple[str, ...]
    """Requests that name the factor; the last one is the persona's current request when the factor is current."""


@dataclass(frozen=True)
class Persona:
    persona_id: str
    current: Factor
    current_preference: Preference
    changed_preference: Preference
    contrast: Factor
    contrast_preference: Preference


def pref(text: str, *items: tuple[str, str]) -> Preference:
    return Preference(text, tuple(item for item, _ in items), tuple(hint for _, hint in items))


PERSONAS = (
    Persona(
        "persona_01",
        Factor("my manager Dana", ("Write an update email to my manager Dana about the delayed vendor contract.",
                                   "Draft a note to my manager Dana asking for approval of the new laptop budget.",
                                   "Help me write a message to my manager Dana about moving the launch date.")),
        pref("Messages to Dana must be under 80 words and open with the decision she needs to make.",
             ("Is the message under 80 words?",
              "Dana reads these on her phone between meetings; this is far too long."),
             ("Does the first sentence state the decision Dana must make?",
              "I had to scroll to find what I am actually asking her.")),
        pref("Messages to Dana should give full background in structured sections with headings.",
             ("Does the message give the full background?",
              "Since the reorg Dana wants the whole story; she said my notes leave her guessing."),
             ("Is the message organised into sections with headings?",
              "She forwards these to finance, so it needs parts they can skim.")),
        Factor("my teammate Omar", ("Write a message to my teammate Omar about the failing build.",
                                    "Help me ask my teammate Omar to review my pull request.")),
        pref("Messages to Omar should be casual and playful, with a joke or emoji.",
             ("Is the tone casual and playful?", "Omar and I are friends, this sounds like HR wrote it."),
             ("Does the message include a joke or an emoji?", "It is missing our usual bit of fun.")),
    ),
    Persona(
        "persona_02",
        Factor("my daughter Mia's science project", ("Explain photosynthesis for my daughter Mia's science project.",
                                                     "Suggest an experiment for my daughter Mia's science project.",
                                                     "Explain magnets for my daughter Mia's science project.")),
        pref("For Mia's project, explain with a hands-on analogy from the kitchen and no technical terms.",
             ("Does the explanation use a hands-on kitchen analogy?",
              "Mia glazed over; she understands things when we can try them while cooking."),
             ("Does it avoid technical terms?", "Words like that make her think she is not smart enough.")),
        pref("For Mia's project, give precise scientific terms with short definitions she can cite.",
             ("Does it use precise scientific terms?", "Her new teacher marks down answers that sound like baby talk."),
             ("Does each term come with a short definition?", "She needs to be able to quote what each word means.")),
        Factor("my own night-school chemistry class", ("Explain oxidation for my night-school chemistry class.",
                                                        "Help me study rates for my night-school chemistry class.")),
        pref("For my chemistry class, be rigorous and include the equations.",
             ("Is the explanation rigorous?", "This is for my exam, not a bedtime story."),
             ("Does it include the relevant equations?", "Where are the formulas? The exam is all equations.")),
    ),
    Persona(
        "persona_03",
        Factor("the Riverside community garden newsletter", (
            "Write an announcement for the Riverside community garden newsletter about the spring planting day.",
            "Draft a piece for the Riverside community garden newsletter about water rules.",
            "Write a notice for the Riverside community garden newsletter about the compost workshop.")),
        pref("Riverside newsletter pieces should be warm, name volunteers by first name, and end with one clear date.",
             ("Is the tone warm and neighbourly?", "It reads like a city council memo; these are my neighbours."),
             ("Are volunteers mentioned by first name?", "People love seeing who helped, like Rosa and Ken."),
             ("Does it end with one clear date?", "Folks kept asking me when it actually is.")),
        pref("Riverside newsletter pieces should be short bullet points with no names, for privacy.",
             ("Is the piece in short bullet points?", "Nobody reads paragraphs on the notice board anymore."),
             ("Does it avoid naming any person?", "After the complaint about privacy, we cannot print names.")),
        Factor("the city permit application", ("Help me write the garden's city permit application.",
                                               "Draft the cover letter for the city permit application.")),
        pref("Permit documents should be formal and cite the relevant regulation numbers.",
             ("Is the tone formal?", "The city clerk will not take this seriously with that chatty tone."),
             ("Does it cite regulation numbers?", "Last time they sent it back asking which rule we meant.")),
    ),
    Persona(
        "persona_04",
        Factor("my marathon training", ("Plan this week's runs for my marathon training.",
                                        "Suggest a long-run routine for my marathon training.",
                                        "Make a recovery plan for my marathon training.")),
        pref("Marathon plans should be a day-by-day table with heart-rate zones rather than paces.",
             ("Is the plan laid out day by day as a table?",
              "I print this and tick off days; a paragraph does not work."),
             ("Are efforts given as heart-rate zones rather than paces?",
              "My watch shows zones, paces mean nothing to me on hills.")),
        pref("Marathon plans should be loose suggestions by feel, with no numbers at all.",
             ("Is the plan loose and flexible?", "After the injury my physio said to stop obsessing over a schedule."),
             ("Does it avoid numbers?", "Numbers stress me out now; I run by feel.")),
        Factor("my kids' weekend bike rides", ("Plan a bike ride for my kids' weekend bike rides.",
                                              "Suggest a route for my kids' weekend bike rides.")),
        pref("Kids' rides should be playful adventures with snack stops and no performance targets.",
             ("Is the ride framed as a playful adventure?", "They are six and eight, this sounds like boot camp."),
             ("Does it include snack stops without targets?",
              "The kids only come for the snacks; forget the distances.")),
    ),
    Persona(
        "persona_05",
        Factor("my landlord Mr. Patel", ("Write a message to my landlord Mr. Patel about the broken heater.",
                                         "Help me ask my landlord Mr. Patel about renewing the lease.",
                                         "Draft a message to my landlord Mr. Patel about the leaking sink.")),
        pref("Messages to Mr. Patel should be polite but firm, cite the lease clause, and set a deadline.",
             ("Is the message polite but firm?", "Too apologetic; last time he ignored me for a month."),
             ("Does it cite the lease clause?", "He only moves when I point to the contract."),
             ("Does it set a deadline?", "Without a date he just says he will get to it.")),
        pref("Messages to Mr. Patel should be friendly and flexible, offering to work around his schedule.",
             ("Is the message friendly?", "We are on good terms since he fixed the roof so fast; this sounds hostile."),
             ("Does it offer to work around his schedule?", "He is caring for his mother now, I want to be flexible.")),
        Factor("my neighbour's barking dog", ("Help me write a note about my neighbour's barking dog.",
                                             "Draft a message about my neighbour's barking dog at night.")),
        pref("Notes about the neighbour's dog should be gentle, suggest a chat, and blame no one.",
             ("Is the note gentle?", "I still have to live next to them, this sounds like a threat."),
             ("Does it suggest a friendly chat without blame?",
              "I would rather just talk over the fence than accuse anyone.")),
    ),
    Persona(
        "persona_06",
        Factor("my board game club", ("Explain the rules of Catan for my board game club.",
                                      "Suggest a new game for my board game club.",
                                      "Explain the rules of Azul for my board game club.")),
        pref("For the board game club, explain rules through a sample first turn, then the edge cases.",
             ("Does it walk through a sample first turn?", "My club learns by doing; a list of rules loses them."),
             ("Does it cover the edge cases after the turn?",
              "Someone always asks about the weird cases, put them at the end.")),
        pref("For the board game club, give a one-paragraph overview only; they read the rulebook themselves.",
             ("Is it a single-paragraph overview?",
              "Our new members are veterans now; they find walkthroughs patronising."),
             ("Does it leave the details to the rulebook?", "They prefer to read the official rules for details.")),
        Factor("family game night with my grandparents",
               ("Explain a card game for family game night with my grandparents.",
                "Suggest a game for family game night with my grandparents.")),
        pref("For my grandparents, use large simple steps and avoid phone apps or small pieces.",
             ("Are the steps large and simple?", "Grandpa got lost after the second step."),
             ("Does it avoid phone apps and small pieces?", "Grandma cannot see small tokens and has no smartphone.")),
    ),
)

DISTRACTORS = (
    (Factor("my sister's birthday dinner", ("Suggest a menu for my sister's birthday dinner.",
                                            "Plan the timing for my sister's birthday dinner.")),
     pref("For my sister's dinner, keep every dish vegetarian and doable in one hour.",
          ("Is every dish vegetarian?", "She stopped eating meat last year, remember."),
          ("Can it be done within one hour?", "I get home at six and we eat at seven."))),
    (Factor("my job interview at a bank", ("Help me prepare answers for my job interview at a bank.",
                                           "Write a thank-you email after my job interview at a bank.")),
     pref("For the bank interview, use concrete numbers from my past results and a confident tone.",
          ("Does it use concrete numbers from past results?", "They will want proof, not adjectives."),
          ("Is the tone confident?", "This sounds like I am apologising for applying."))),
    (Factor("my trip to Lisbon", ("Plan a day for my trip to Lisbon.", "Suggest restaurants for my trip to Lisbon.")),
     pref("For Lisbon, favour walkable places away from tourist crowds.",
          ("Are the places walkable from each other?", "I am not taking taxis all day, my knees are fine for walking."),
          ("Does it avoid tourist crowds?", "Those spots will be packed with tour groups."))),
    (Factor("my book club's monthly pick", ("Summarise this month's novel for my book club's monthly pick.",
                                            "Suggest discussion questions for my book club's monthly pick.")),
     pref("For book club, avoid spoilers past chapter ten and ask open questions.",
          ("Does it avoid spoilers past chapter ten?", "Half the club has not finished it!"),
          ("Are the questions open-ended?", "Yes-or-no questions kill the conversation."))),
    (Factor("my home office setup", ("Help me choose a desk for my home office setup.",
                                     "Suggest lighting for my home office setup.")),
     pref("For my home office, stay under 200 dollars and list exact products.",
          ("Does it stay under 200 dollars?", "That is way past what I can spend this month."),
          ("Does it list exact products?", "I need something I can actually order tonight."))),
    (Factor("my grandmother's recipe collection", ("Help me organise my grandmother's recipe collection.",
                                                   "Write an introduction for my grandmother's recipe collection.")),
     pref("For Grandma's recipes, keep her original wording and add metric measures beside hers.",
          ("Does it keep her original wording?", "That is not how she said it; the charm is in her words."),
          ("Are metric measures added beside hers?", "My cousins in Europe cannot use cups."))),
)

OPENERS = ("Here is a first draft", "Sure, a first version", "Of course, a draft")
DRAFT = "for {factor}, in a general style."
REVISIONS = ("Revised to fix that.", "Reworked along those lines.", "Updated.")
CLOSERS = ("That's exactly what I needed, thanks!", "Perfect, this works now.", "Great, much better.")


def dialogue(rng: random.Random, factor: Factor, request: str, preference: Preference) -> list[dict[str, str]]:
    """The request, a first answer that misses the preference, one indirect hint per checklist item, satisfaction."""
    draft = f"{rng.choice(OPENERS)} {DRAFT.format(factor=factor.name.replace('my ', 'your '))}"
    turns = [{"role": "user", "content": request}, {"role": "assistant", "content": draft}]
    for hint in preference.feedback:
        turns += [{"role": "user", "content": hint}, {"role": "assistant", "content": rng.choice(REVISIONS)}]
    turns.append({"role": "user", "content": rng.choice(CLOSERS)})
    return turns


def session(rng: random.Random, factor: Factor, preference: Preference, request: str) -> dict[str, Any]:
    return {"context_factor": factor.name, "contextual_preference": preference.text,
            "dialogue": dialogue(rng, factor, request, preference)}


def persona_instances(rng: random.Random, persona: Persona) -> list[dict[str, Any]]:
    distractors = rng.sample(DISTRACTORS, 3)
    filler = [(factor, preference, request) for factor, preference in distractors for request in factor.requests]
    rng.shuffle(filler)
    current_request = persona.current.requests[-1]
    earlier = persona.current.requests[:2]
    current = [(persona.current, persona.current_preference, request) for request in earlier]
    contrast = [(persona.contrast, persona.contrast_preference, request) for request in persona.contrast.requests]
    changed = [(persona.current, persona.changed_preference, request) for request in earlier]
    # Chronological order: relevant sessions are spread through the history, never only at its end.
    plans = {
        "consistent": (_interleave(rng, filler[:6], current), persona.current_preference),
        "contrastive": (_interleave(rng, filler[:4], current + contrast), persona.current_preference),
        "changing": (_interleave(rng, filler[:2], current) + _interleave(rng, filler[2:4], changed),
                     persona.changed_preference),
    }
    instances = []
    for instance_type, (plan, gold) in plans.items():
        assert len(plan) == SESSIONS_PER_INSTANCE, instance_type
        instances.append({
            "persona_id": persona.persona_id,
            "instance_type": instance_type,
            "current_request": current_request,
            "current_context_factor": persona.current.name,
            "current_contextual_preference": gold.text,
            "current_checklist": list(gold.checklist),
            "prior_interactions": [session(rng, *planned) for planned in plan],
        })
    return instances


def _interleave(rng: random.Random, filler: list[Any], relevant: list[Any]) -> list[Any]:
    """`relevant` sessions in their order at random positions among `filler`."""
    positions = sorted(rng.sample(range(len(filler) + len(relevant)), len(relevant)))
    merged, filler_iter, relevant_iter = [], iter(filler), iter(relevant)
    for index in range(len(filler) + len(relevant)):
        merged.append(next(relevant_iter) if index in positions else next(filler_iter))
    return merged


def generate(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [instance for persona in PERSONAS for instance in persona_instances(rng, persona)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    rows = generate(args.seed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    print(f"wrote {len(rows)} synthetic CUPID instances to {args.output}")


if __name__ == "__main__":
    main()
