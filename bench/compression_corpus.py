"""Long memories for the compression benchmark, each with the facts it states.

Written by hand to look like what assistants store: decisions, preferences, incidents, plans,
people. The `identifiers` ones are dense with hashes, ids, paths and numbers: there a faithful
one-line form cannot be much shorter, and the guard should often keep the text as written.
A fact counts as kept when it appears in the compressed line, ignoring case, spaces and `_`.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    topic: str
    text: str
    facts: tuple[str, ...]
    identifiers: bool = False


SAMPLES: tuple[Sample, ...] = (
    Sample(
        "staging database",
        "The staging database for the billing project moved to a dedicated PostgreSQL 16 server on port 5433 "
        "in March 2025. Priya decided to put PgBouncer in front of it in transaction pooling mode because the "
        "Django workers were opening more than 400 connections during the nightly invoice run. Connections from "
        "the reporting jobs still go directly to the server, since they rely on session-level advisory locks. "
        "The migration was tested with a copy of production data and took eleven minutes of downtime.",
        ("billing", "PostgreSQL 16", "5433", "PgBouncer", "transaction", "Priya", "400", "advisory lock"),
    ),
    Sample(
        "coffee preference",
        "When I ask for help planning my mornings, remember that I drink exactly one flat white before 9 am and "
        "nothing with caffeine after 2 pm, because anything later keeps me awake. I prefer oat milk; regular milk "
        "upsets my stomach, and almond milk I simply dislike. On weekends I switch to a decaf pour-over and I like "
        "to grind the beans myself, medium-fine, with the Comandante grinder my sister gave me. Please do not "
        "suggest energy drinks or matcha as alternatives; I have tried both and did not like them.",
        ("flat white", "9 am", "2 pm", "oat milk", "decaf", "Comandante", "energy drinks", "matcha"),
    ),
    Sample(
        "release process",
        "We agreed in the engineering sync on 14 January that the mobile app ships every second Thursday. The "
        "release branch is cut on the Monday before, QA gets Tuesday and Wednesday, and Fatima signs off as "
        "release manager. Hotfixes skip the train but need two approvals and a note in the #releases channel. "
        "Feature flags in LaunchDarkly are the preferred way to hide unfinished work instead of long-lived "
        "branches. The first release on the new schedule is version 4.12.",
        ("second Thursday", "Monday", "Fatima", "two approvals", "#releases", "LaunchDarkly", "4.12", "14 January"),
    ),
    Sample(
        "checkout incident",
        "Incident on 3 June: the checkout page returned HTTP 502 for about 40 minutes between 18:10 and 18:50 UTC. "
        "The cause was an expired TLS certificate on the internal payments gateway, which the load balancer could "
        "no longer verify. Diego renewed the certificate manually and then moved it to cert-manager with automatic "
        "renewal 30 days before expiry. We lost roughly 1,200 orders during the outage. A follow-up ticket, "
        "PAY-2291, adds an alert when any certificate has fewer than 14 days left.",
        ("3 June", "502", "40 minutes", "TLS certificate", "Diego", "cert-manager", "1,200", "PAY-2291", "14 days"),
    ),
    Sample(
        "trip to Lisbon",
        "Planning notes for the Lisbon trip: we fly out on Friday 12 September on TAP flight TP1351 from Berlin at "
        "06:40 and come back on Tuesday the 16th. The apartment is in Alfama, near the Santa Luzia viewpoint, and "
        "check-in is after 3 pm. Ana wants a day trip to Sintra, ideally on Sunday when the trains are less "
        "crowded. I would like to book a fado dinner for Saturday night. Budget for the whole trip is about 1,400 "
        "euros for the two of us, flights included.",
        ("Lisbon", "12 September", "TP1351", "Berlin", "Alfama", "3 pm", "Sintra", "fado", "1,400"),
    ),
    Sample(
        "search relevance decision",
        "After two weeks of experiments the search team decided to keep BM25 for exact matches and add vector "
        "search with all-MiniLM-L6-v2 embeddings, fused with reciprocal rank fusion at k=60. Pure vector search "
        "missed queries with error codes and order numbers, and pure BM25 missed paraphrases such as 'checkout "
        "screen' for 'pricing page layout'. Chen ran the offline evaluation: recall@10 went from 0.71 to 0.86 with "
        "the hybrid. Latency stayed under 40 ms p95 on the 10k-document test set.",
        ("BM25", "all-MiniLM-L6-v2", "k=60", "error codes", "Chen", "0.71", "0.86", "40 ms"),
    ),
    Sample(
        "dietary needs",
        "My partner Sam is coeliac, so anything we cook together or any restaurant you suggest for the two of us "
        "has to be strictly gluten-free, not just 'gluten-friendly' with shared fryers. I am vegetarian but eat "
        "eggs and dairy. Neither of us likes coriander. For weeknight recipes we want something under 30 minutes "
        "with at most eight ingredients, and we own a cast-iron pan and a rice cooker but no microwave. We usually "
        "cook for two and like leftovers for lunch the next day.",
        ("Sam", "coeliac", "gluten-free", "vegetarian", "eggs", "coriander", "30 minutes", "eight ingredients"),
    ),
    Sample(
        "API versioning",
        "For the public REST API we decided to version in the URL path (/v1/, /v2/) rather than with headers, "
        "because several large customers call us from tools that cannot set custom headers. A version is supported "
        "for at least 18 months after its successor ships, and deprecations are announced by e-mail and with a "
        "Sunset header. Breaking changes need an RFC approved by Lars and one other staff engineer. Version 2 will "
        "drop XML responses and the legacy offset pagination.",
        ("URL path", "/v1/", "18 months", "Sunset header", "RFC", "Lars", "XML", "offset pagination"),
    ),
    Sample(
        "onboarding a new hire",
        "Yuki joins the data team on 1 October as a senior analytics engineer, reporting to Olga. She will work "
        "remotely from Osaka, so her core overlap with the Berlin office is 09:00 to 11:00 CET. Her first project "
        "is migrating the revenue dashboards from Looker to Metabase before the Q4 board meeting. She needs "
        "access to Snowflake, dbt Cloud and the #data-eng channel, and her buddy for the first month is Mateo. "
        "Laptop: a 14-inch MacBook Pro, shipped to Osaka.",
        ("Yuki", "1 October", "Olga", "Osaka", "09:00", "Looker", "Metabase", "Snowflake", "Mateo"),
    ),
    Sample(
        "kubernetes cost problem",
        "Our AWS bill for the EKS cluster doubled between April and May, from about 18,000 to 36,000 dollars. Noor "
        "traced most of it to the analytics namespace: the Spark jobs request 16 vCPUs per executor but use fewer "
        "than 3 on average, and the cluster autoscaler keeps adding m5.4xlarge nodes for them. The fix we agreed "
        "on is to lower the requests to 4 vCPUs, move the jobs to spot instances through Karpenter, and set a "
        "namespace quota. Expected saving is around 12,000 dollars a month.",
        ("EKS", "18,000", "36,000", "Noor", "analytics", "16 vCPU", "m5.4xlarge", "Karpenter", "12,000"),
    ),
    Sample(
        "writing style preference",
        "When you draft e-mails or documents for me, keep them short and plain: no more than three paragraphs, "
        "no bullet points unless I ask, and never start with 'I hope this e-mail finds you well'. I write British "
        "English (colour, organise) and use the Oxford comma. Sign e-mails to colleagues with just 'Thanks, Maria' "
        "and to external people with my full name, Maria Keller, and my title, Head of Partnerships. Avoid "
        "exclamation marks and words like 'synergy' or 'leverage'.",
        (
            "three paragraphs",
            "bullet points",
            "British English",
            "Oxford comma",
            "Maria Keller",
            "Head of Partnerships",
            "exclamation marks",
            "synergy",
        ),
    ),
    Sample(
        "flaky test investigation",
        "The flaky test test_refund_is_idempotent in the payments service fails about once in fifty CI runs. Bob "
        "found that it depends on the order in which two Celery tasks finish: when the refund webhook arrives "
        "before the ledger entry is committed, the second refund is not detected as a duplicate. The proper fix "
        "is a unique constraint on (payment_id, idempotency_key) in the refunds table, plus catching the "
        "IntegrityError. Until that ships the test is marked xfail with a link to ticket PAY-2317.",
        (
            "test_refund_is_idempotent",
            "fifty",
            "Bob",
            "Celery",
            "webhook",
            "idempotency_key",
            "IntegrityError",
            "xfail",
            "PAY-2317",
        ),
    ),
    Sample(
        "home renovation",
        "The kitchen renovation starts on 5 May and should take six weeks. The contractor is Novak & Sons; the "
        "contact is Petr Novak, phone +420 602 555 013. We chose the oak worktop over quartz because it is warmer "
        "and 2,300 euros cheaper, accepting that it needs oiling twice a year. The induction hob and the oven are "
        "from Bosch and arrive on 20 May. The total budget is 24,000 euros, with 10 percent kept aside for "
        "surprises behind the old tiles.",
        ("5 May", "six weeks", "Novak", "+420 602 555 013", "oak", "quartz", "2,300", "Bosch", "24,000", "10 percent"),
    ),
    Sample(
        "customer feedback",
        "Three enterprise customers (Globex, Initech and Umbrella Health) told us in the quarterly reviews that "
        "the single biggest blocker to wider rollout is the lack of SAML single sign-on. Initech also needs SCIM "
        "provisioning because they manage 4,000 seats through Okta. Umbrella Health additionally asked for a "
        "signed BAA before storing any patient data. Product agreed to prioritise SAML for Q3, SCIM for Q4, and "
        "legal will review the BAA template by the end of the month.",
        ("Globex", "Initech", "Umbrella Health", "SAML", "SCIM", "4,000", "Okta", "BAA", "Q3", "Q4"),
    ),
    Sample(
        "fitness goal",
        "My goal for this year is to run the Berlin half marathon on 6 April in under two hours; my best so far "
        "is 2:11 from last autumn. I run three times a week: an easy 6 km on Tuesday, intervals on Thursday and "
        "a long run on Sunday that should reach 18 km by mid-March. My left knee gets sore above 40 km a week, so "
        "keep weekly mileage below that and include two strength sessions. I track everything in Strava and use "
        "a Garmin Forerunner 255.",
        (
            "half marathon",
            "6 April",
            "two hours",
            "2:11",
            "three times",
            "18 km",
            "left knee",
            "40 km",
            "Strava",
            "Forerunner 255",
        ),
    ),
    Sample(
        "data retention policy",
        "Legal confirmed the data retention rules for the analytics warehouse: raw event data is kept for 13 "
        "months and then deleted, aggregated tables may be kept indefinitely as long as they contain no user "
        "identifiers, and support tickets are deleted 3 years after they are closed. Deletion requests under GDPR "
        "article 17 must be completed within 30 days, including backups, which currently rotate every 35 days, "
        "so the backup rotation has to be shortened. Fatima owns the implementation.",
        ("13 months", "aggregated", "3 years", "GDPR", "article 17", "30 days", "35 days", "Fatima"),
    ),
    Sample(
        "frontend stack decision",
        "The team chose to rebuild the admin panel with React 19 and TanStack Query instead of continuing with the "
        "old Angular 8 code, which can no longer be upgraded without rewriting most of it. Styling moves to "
        "Tailwind CSS, and we keep the existing REST API rather than introducing GraphQL. Alice estimated the "
        "rewrite at ten weeks for two engineers. The old panel stays online read-only until every page has been "
        "ported, and both share the same login through the auth service.",
        ("React 19", "TanStack Query", "Angular 8", "Tailwind", "GraphQL", "Alice", "ten weeks", "read-only"),
    ),
    Sample(
        "family birthdays",
        "Birthdays to remember and how I usually celebrate them: my mother Helga turns 70 on 22 August and we are "
        "planning a lunch at the lake house in Wannsee with the whole family; my brother Jonas is on 3 February and "
        "likes board games, he already owns Catan and Wingspan; my niece Lea turns 8 on 17 November and is into "
        "horses and drawing. I usually send flowers to Helga through the local florist on Kantstrasse rather than "
        "a delivery service.",
        ("Helga", "70", "22 August", "Wannsee", "Jonas", "3 February", "Wingspan", "Lea", "17 November", "Kantstrasse"),
    ),
    Sample(
        "queue migration",
        "We are replacing RabbitMQ with Amazon SQS for the notification service. RabbitMQ needed a dedicated "
        "three-node cluster that nobody on the team knows how to operate, and two of the last five incidents were "
        "caused by its disk alarms. SQS FIFO queues give us ordering per message group, which is enough since we "
        "only need ordering per user. Messages larger than 256 KB go to S3 with a pointer in the queue. The cutover "
        "is planned for the week of 9 June, with Sam on call.",
        ("RabbitMQ", "SQS", "three-node", "disk alarms", "FIFO", "per user", "256 KB", "S3", "9 June", "Sam"),
    ),
    Sample(
        "reading list preference",
        "I like recommendations for long non-fiction about the history of science and technology, for example "
        "'The Making of the Atomic Bomb' or 'The Dream Machine', and literary fiction from Japan and Scandinavia. "
        "I do not enjoy self-help, business books or fantasy. I read mostly on a Kobo e-reader, so EPUB is fine "
        "and DRM-free is better; audiobooks only for the commute, and then preferably under ten hours. I already "
        "finished everything by Haruki Murakami and Karl Ove Knausgaard.",
        (
            "history of science",
            "Atomic Bomb",
            "Dream Machine",
            "Japan",
            "self-help",
            "Kobo",
            "DRM-free",
            "ten hours",
            "Murakami",
            "Knausgaard",
        ),
    ),
    Sample(
        "pricing change",
        "From 1 July the Team plan goes from 12 to 15 dollars per user per month, billed annually; monthly billing "
        "becomes 18 dollars. Existing customers keep the old price until their next renewal and get 60 days' "
        "notice by e-mail. The free plan drops from 5 to 3 users. The Enterprise plan stays custom-priced but now "
        "starts at 50 seats. Finance expects a 9 percent revenue increase and accepts up to 4 percent extra churn. "
        "Mateo prepares the announcement.",
        (
            "1 July",
            "Team plan",
            "12",
            "15 dollars",
            "18 dollars",
            "60 days",
            "3 users",
            "50 seats",
            "9 percent",
            "4 percent",
            "Mateo",
        ),
    ),
    Sample(
        "laptop setup",
        "My work laptop is a ThinkPad X1 Carbon Gen 11 running Fedora 40 with GNOME. I use Neovim with the LazyVim "
        "config as my editor and Kitty as the terminal, with the Fish shell. Python projects are managed with uv, "
        "Node with fnm, and containers with Podman rather than Docker Desktop. Dotfiles live in a private GitHub "
        "repository called dotfiles and are applied with chezmoi. When you suggest commands, assume Fedora and "
        "dnf, not Ubuntu and apt.",
        (
            "ThinkPad X1 Carbon",
            "Fedora 40",
            "GNOME",
            "Neovim",
            "LazyVim",
            "Kitty",
            "Fish",
            "uv",
            "Podman",
            "chezmoi",
            "dnf",
        ),
    ),
    Sample(
        "hiring decision",
        "After the final round we decided to hire Ravi Menon as staff engineer for the platform team, starting on "
        "1 September. He was the strongest candidate on system design, especially on multi-region failover, and "
        "the team liked how he handled disagreement in the pairing session. The offer is 135,000 euros base plus "
        "the standard equity grant. The second candidate, Julia, was also strong; we will keep her in mind for "
        "the SRE opening in Q1. Olga sends the offer on Monday.",
        (
            "Ravi Menon",
            "staff engineer",
            "platform",
            "1 September",
            "multi-region failover",
            "135,000",
            "Julia",
            "SRE",
            "Olga",
            "Monday",
        ),
    ),
    Sample(
        "garden plan",
        "Garden plan for this spring: the raised bed by the south fence gets tomatoes (San Marzano and Sungold), "
        "basil and two courgette plants; the shady corner under the birch gets lettuce and spinach, which bolt in "
        "full sun. Sow the tomatoes indoors in mid-March and plant them out after the last frost, usually around "
        "15 May here. Slugs destroyed last year's lettuce, so use copper tape and beer traps this time instead of "
        "pellets, because the neighbour's dog comes through the hedge.",
        (
            "south fence",
            "San Marzano",
            "Sungold",
            "courgette",
            "birch",
            "lettuce",
            "mid-March",
            "15 May",
            "copper tape",
            "dog",
        ),
    ),
    Sample(
        "observability choice",
        "We evaluated Datadog, Grafana Cloud and a self-hosted Prometheus, Loki and Tempo stack for metrics, logs "
        "and traces. Datadog was the easiest but would cost about 9,000 dollars a month at our volume. We chose "
        "Grafana Cloud with OpenTelemetry collectors in every cluster: it costs about 3,200 dollars a month, keeps "
        "us on open standards, and Lars already knows it well. Log retention is 30 days, traces are sampled at "
        "10 percent except for errors, which are always kept.",
        (
            "Datadog",
            "Grafana Cloud",
            "Prometheus",
            "9,000",
            "OpenTelemetry",
            "3,200",
            "Lars",
            "30 days",
            "10 percent",
            "errors",
        ),
    ),
    Sample(
        "meeting preferences",
        "Scheduling rules for my calendar: no meetings before 10:00 or after 17:00 Berlin time, and Wednesday "
        "afternoons are blocked for focused work. One-to-ones with my reports are 30 minutes every second week, "
        "on Tuesdays. I prefer video off for internal calls longer than an hour. If someone asks for a meeting "
        "without an agenda, draft a polite reply asking for one first. Travel days are Thursdays, so keep them "
        "free of calls whenever I am flying.",
        ("10:00", "17:00", "Wednesday afternoons", "30 minutes", "Tuesdays", "video off", "agenda", "Thursdays"),
    ),
    Sample(
        "deploy commits",
        "Production deploy of 2025-06-03 shipped these commits: 9f2c4e1a (fix rounding in invoice totals), "
        "b71d03ce (bump psycopg to 3.2.9), 4e8a9f10 (add index idx_orders_customer_created), c0ffee42 (feature "
        "flag new_checkout_v2 default off), 5d6e7f80 (revert 1a2b3c4d), and 77aa88bb (update Sentry DSN for "
        "eu-central-1). Deploy id dep-20250603-1412, pipeline run 48213, image "
        "registry.example.com/shop/api:2025.06.03-1412, rollback target 2025.05.28-0930.",
        (
            "9f2c4e1a",
            "b71d03ce",
            "3.2.9",
            "idx_orders_customer_created",
            "c0ffee42",
            "new_checkout_v2",
            "5d6e7f80",
            "1a2b3c4d",
            "77aa88bb",
            "dep-20250603-1412",
            "48213",
            "2025.05.28-0930",
        ),
        identifiers=True,
    ),
    Sample(
        "service endpoints",
        "Internal endpoints for the ledger service: gRPC at ledger.internal.example.com:7443, REST admin at "
        "https://ledger-admin.internal.example.com/api/v3, metrics at :9102/metrics, health at :8081/healthz. "
        "Database: ledger-prod-db.cluster-c9xk2m1.eu-central-1.rds.amazonaws.com:5432/ledger, read replica "
        "ledger-prod-db.cluster-ro-c9xk2m1.eu-central-1.rds.amazonaws.com. Kafka topics: ledger.entries.v2, "
        "ledger.reversals.v1, ledger.dlq. Vault path secret/data/ledger/prod.",
        (
            "ledger.internal.example.com:7443",
            "/api/v3",
            "9102",
            "8081",
            "c9xk2m1",
            "ledger.entries.v2",
            "ledger.reversals.v1",
            "ledger.dlq",
            "secret/data/ledger/prod",
        ),
        identifiers=True,
    ),
    Sample(
        "stack trace",
        "Error seen in worker-7 at 2025-05-14T03:12:09Z: psycopg.errors.SerializationFailure: could not serialize "
        "access due to concurrent update, CONTEXT: SQL statement UPDATE accounts SET balance = balance - 250.00 "
        "WHERE id = 'a3f1c2d4-5b6e-4f70-8a91-b2c3d4e5f607'. Traceback: ledger/transfers.py line 188 in "
        "apply_transfer, ledger/db.py line 42 in run_in_transaction, celery task ledger.tasks.settle_batch "
        "id 6c1d9e0b-0f3a-4b52-9d7e-2a8b5c4f1e93, retry 3 of 5.",
        (
            "worker-7",
            "2025-05-14T03:12:09Z",
            "SerializationFailure",
            "250.00",
            "a3f1c2d4-5b6e-4f70-8a91-b2c3d4e5f607",
            "transfers.py",
            "188",
            "settle_batch",
            "6c1d9e0b-0f3a-4b52-9d7e-2a8b5c4f1e93",
            "3 of 5",
        ),
        identifiers=True,
    ),
    Sample(
        "feature flags",
        "Current feature flags in production (LaunchDarkly project shop-prod): new_checkout_v2=off, "
        "search_hybrid_rrf=on (100%), pricing_page_2025=on for segment beta-testers, invoice_pdf_v3=on (25%), "
        "mobile_dark_mode=on, legacy_export_csv=off (remove after 2025-09-01), recommendations_mmr=on (50%), "
        "sso_saml=off (enable per account: acct_8812, acct_9930, acct_10477), rate_limit_v2=on with burst=40 "
        "and sustained=10/s.",
        (
            "new_checkout_v2",
            "search_hybrid_rrf",
            "pricing_page_2025",
            "invoice_pdf_v3",
            "25%",
            "legacy_export_csv",
            "2025-09-01",
            "recommendations_mmr",
            "acct_8812",
            "acct_10477",
            "burst=40",
        ),
        identifiers=True,
    ),
    Sample(
        "ssh hosts",
        "Hosts in the old data centre that still need decommissioning: db-legacy-01 (10.20.4.11, Ubuntu 18.04, "
        "owner Noor), db-legacy-02 (10.20.4.12, Ubuntu 18.04), ftp-partner (10.20.9.3, vsftpd 3.0.3, used by "
        "partner ACME until 2025-08-31), build-old (10.20.7.40, Jenkins 2.303), mail-relay-2 (10.20.1.25, "
        "Postfix 3.4). SSH jump host: bastion.dc1.example.net port 2222, user ops, key ~/.ssh/dc1_ed25519. "
        "Firewall rule fw-dc1-legacy goes last.",
        (
            "db-legacy-01",
            "10.20.4.11",
            "18.04",
            "10.20.4.12",
            "10.20.9.3",
            "ACME",
            "2025-08-31",
            "Jenkins 2.303",
            "10.20.1.25",
            "bastion.dc1.example.net",
            "2222",
            "dc1_ed25519",
            "fw-dc1-legacy",
        ),
        identifiers=True,
    ),
    Sample(
        "dependency pins",
        "Pinned versions that must not be upgraded without testing, with the reason: Django==5.2.19 (LTS), "
        "psycopg[binary]==3.3.9, celery==5.4.0 (5.5 broke our chord callbacks), redis==5.0.8, "
        "numpy==1.26.4 (2.x breaks the scoring model pickle), scikit-learn==1.4.2, pandas==2.2.2, "
        "boto3==1.34.162, pydantic==2.7.4 (2.8 changed datetime parsing), gunicorn==22.0.0, sentry-sdk==2.12.0, "
        "and node 20.15.1 for the asset build.",
        (
            "5.2.19",
            "3.3.9",
            "celery==5.4.0",
            "chord",
            "numpy==1.26.4",
            "1.4.2",
            "2.2.2",
            "1.34.162",
            "pydantic==2.7.4",
            "22.0.0",
            "2.12.0",
            "20.15.1",
        ),
        identifiers=True,
    ),
)
