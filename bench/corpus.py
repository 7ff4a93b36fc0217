"""Synthetic but realistic memories and questions for the benchmarks (deterministic per seed)."""

import random

PROJECTS = [
    "billing",
    "checkout",
    "search",
    "onboarding",
    "mobile app",
    "data pipeline",
    "auth service",
    "analytics",
    "notifications",
    "admin panel",
    "pricing page",
    "docs site",
    "CLI",
    "SDK",
    "warehouse",
]
PEOPLE = ["Alice", "Bob", "Priya", "Chen", "Fatima", "Lars", "Mateo", "Yuki", "Olga", "Sam", "Noor", "Diego"]
TECH = [
    "PostgreSQL",
    "Redis",
    "Kafka",
    "Django",
    "React",
    "Terraform",
    "Kubernetes",
    "gRPC",
    "GraphQL",
    "Celery",
    "Next.js",
    "Rust",
    "Go",
    "S3",
    "Elasticsearch",
    "Sentry",
    "Grafana",
    "nginx",
]
PLACES = ["Berlin", "Lisbon", "Toronto", "Singapore", "Nairobi", "Austin", "Kyoto", "Oslo"]
REASONS = [
    "it cut p95 latency in half",
    "the old setup kept timing out under load",
    "users found it confusing",
    "it was cheaper to run",
    "the team already knew it",
    "it removed a whole class of bugs",
    "compliance asked for it",
    "the vendor ended support",
]
TEMPLATES = [
    "Decided to move the {project} from {tech} to {tech2} because {reason}.",
    "{person} prefers {tech} for the {project}; they said {reason}.",
    "The {project} deploy failed with {error} on version {version}; fixed by pinning {tech}.",
    "Meeting with {person} in {place}: the {project} launch slips to {month} because {reason}.",
    "Bug {ticket} in the {project}: {tech} returns {error} when the cache is cold.",
    "Commit {sha} changed how the {project} talks to {tech}; revert it if {error} shows up again.",
    "{person} owns the {project} roadmap and wants weekly updates on Mondays.",
    "The {project} uses the brand colour {colour} for primary buttons since the redesign.",
    "Travel: {person} flies to {place} on flight {flight} for the {project} offsite in {month}.",
    "Constraint: the {project} must stay under {number} ms p95 and run on {tech}.",
    "Goal for {month}: ship the {project} beta with {tech} and onboard {number} customers.",
    "Problem: {tech} memory grows without bound in the {project}; suspected leak after {version}.",
    "Solution: set {tech} connection pool to {number} in the {project}, {reason}.",
    "{person} asked to document the {project} runbook, especially how to recover from {error}.",
    "We chose {tech} over {tech2} for the {project} because {reason}.",
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
QUESTIONS = [
    "what did we decide about the {project}?",
    "who is responsible for the {project}?",
    "why did we switch technologies in the {project}?",
    "{error}",
    "{ticket}",
    "when is {person} travelling?",
    "which database does the {project} use?",
    "what colour are the buttons?",
    "how do we recover from {error}?",
    "what are the performance limits of the {project}?",
]


def _slots(rng: random.Random) -> dict:
    tech, tech2 = rng.sample(TECH, 2)
    return {
        "project": rng.choice(PROJECTS),
        "person": rng.choice(PEOPLE),
        "tech": tech,
        "tech2": tech2,
        "place": rng.choice(PLACES),
        "reason": rng.choice(REASONS),
        "month": rng.choice(MONTHS),
        "error": f"ERR_{rng.choice(['CONN', 'AUTH', 'TIMEOUT', 'QUOTA', 'SCHEMA'])}_{rng.randint(100, 999)}",
        "version": f"{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "ticket": f"{rng.choice(['OPS', 'BUG', 'PAY', 'WEB'])}-{rng.randint(1000, 9999)}",
        "sha": f"{rng.getrandbits(28):07x}",
        "colour": f"#{rng.getrandbits(24):06x}",
        "flight": f"{rng.choice(['LH', 'BA', 'AC', 'SQ'])}{rng.randint(100, 999)}",
        "number": rng.randint(2, 500),
    }


def memories(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(TEMPLATES).format(**_slots(rng)) for _ in range(count)]


def questions(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(QUESTIONS).format(**_slots(rng)) for _ in range(count)]
