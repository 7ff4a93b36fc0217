"""The word lists entity extraction reads by: words capitalised without being names, known
technologies, units, top-level domains, file extensions, aliases, the compressed-form keys and tag
namespaces that name a kind. Data only; the rules are in memories.entities.extraction."""

from memories.vocabulary import FACT_KEYS

# Of the compressed form's keys (memories.vocabulary), these name entities; the others hold sentences.
FACT_KINDS = {"PERSON": "person", "PROJECT": "project", "PLACE": "place", "STACK": "technology", "TOPIC": "topic"}
TAG_NAMESPACES = {
    "person": "person",
    "project": "project",
    "place": "place",
    "topic": "topic",
    "tech": "technology",
    "stack": "technology",
    "technology": "technology",
}
ALIASES = {
    "postgres": "postgresql",
    "pg": "postgresql",
    "k8s": "kubernetes",
    "js": "javascript",
    "ts": "typescript",
    "gh": "github",
    "py": "python",
    "golang": "go",
}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Capitalised in text without being names: they break a run of capitalised words and never count
# on their own, wherever they stand.
STOPWORDS = _words(
    """
    i me my mine myself you your yours yourself yourselves he him his himself she her hers herself
    it its itself we us our ours ourselves they them their theirs themselves this that these those
    who whom whose which what whatever whoever whichever someone somebody something anyone anybody
    anything everyone everybody everything nobody nothing none one ones each both either neither
    all any some many much most more few several other others another such same own
    i'm i've i'll i'd you're you've you'll you'd he's he'd he'll she's she'd she'll it's it'd
    it'll we're we've we'll we'd they're they've they'll they'd that's that'd there's here's
    what's who's where's when's why's how's let's don't doesn't didn't can't couldn't won't
    wouldn't shouldn't isn't aren't wasn't weren't haven't hasn't hadn't ain't y'all
    the a an and or but nor so yet for if then else than as at by in into on onto of off to from
    with without within about above below after before during since until till through across
    against among between beyond over under upon via per around along behind beside besides despite
    except inside outside toward towards near like unlike because although though while whereas
    whether unless once whenever wherever however therefore thus hence also too only just even
    still already again always never ever often sometimes usually maybe perhaps probably possibly
    actually basically really very quite rather not no yes yeah yep yup nope nah ok okay sure well
    oh ah aha hmm hm um uh er wow whoa hey hi hello hiya howdy bye goodbye thanks thank thx cheers
    please sorry congrats congratulations welcome dear great good nice cool awesome amazing
    wonderful fantastic lovely love haha hahaha lol omg btw anyway anyways meanwhile otherwise
    instead indeed finally first firstly second secondly third lastly next now today tonight
    tomorrow yesterday soon later earlier recently currently here there where when why how
    is are was were be been being am do does did done have has had will would shall should can
    could may might must
    monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri
    sat sun january february march april june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
    morning afternoon evening night midnight noon weekend week month year day days weeks months
    years spring summer autumn fall winter christmas easter halloween thanksgiving birthday
    anniversary holiday holidays
    mr mrs ms miss mx dr prof sir madam st mt jr sr
    """
)

# Words that often open a sentence and are no name: a capitalised run that starts with one at
# the start of a sentence loses it ("Ask Priya" is "Priya").
COMMON_INITIAL = _words(
    """
    ask asked tell told call called email emailed ping pinged message text texted invite invited
    meet met thank remind reminded contact contacted visit visited see saw seen check checked
    add added remove removed fix fixed deploy deployed install installed upgrade upgraded update
    updated use used using run ran running make made build built create created write wrote
    written read open opened close closed start started stop stopped move moved set get got go
    went going come came take took give gave keep kept put try tried want wanted need needed like
    liked love loved hate think thought know knew feel felt look looked find found show showed
    let help helped talk talked spoke said say says mention mentioned note noted remember learned
    decided agreed chose picked switched migrated replaced released shipped merged reviewed
    tested configured enabled disabled restarted rolled paired joined left spent bought booked
    flew drove walked watched played went reading watching playing working talking thinking
    planning trying looking getting going having making doing being seeing meeting visiting
    just also so then after before when while since because if although though even only maybe
    happy glad sad excited proud hope hoping wish sounds seems
    """
)

# Line-start labels that are headings, not speakers ("Note: ...").
NOT_SPEAKERS = _words(
    """
    note notes update updates summary error errors warning warnings info debug user users assistant
    system human ai bot question questions answer answers q edit example examples result results
    output input reason status action actions date time location subject re fwd cc bcc tip tips
    hint fix bug issue issues problem problems solution decision decisions context goal goals step
    steps details source sources reference references important tldr pros cons ingredients
    instructions description title name owner author priority deadline agenda attendees outcome
    conclusion background overview todo done next later team customer client support admin host
    guest speaker moderator narrator idea ideas plan plans recap takeaway takeaways follow
    caveat caveats rule rules usage links link see also total cost price address phone
    """
)

# Acronyms and mixed-case words that are no entity.
NOT_NAMES = (
    _words(
        """
        ok todo todos fyi asap i a am pm tbd tba eta aka imo imho btw lol omg wtf tldr tl dr nb ps
        re fw fwd cc bcc id ids na etc vs eg ie ty thx pls plz np idk irl afaik iirc brb gg ftw rip
        diy faq eod eow ooo wip fixme xxx hack note info warn error debug fatal trace done yes no
        true false null none nan inf utc gmt est edt pst pdt cet cest bst ist usd eur gbp jpy chf
        cad aud inr cny kb mb gb tb kib mib gib tib ms ns hz khz mhz ghz ad bc ii iii iv vi vii viii
        ix xi xii xiii xiv xv xx pr prs
        """
    )
    | {key.lower() for key in FACT_KEYS}
    | STOPWORDS
)

# Known technologies, found in any case. Only unambiguous words: no "go", "rust", "react" or
# "flask", which are English first.
TECHNOLOGIES = _words(
    """
    postgresql postgres mysql mariadb sqlite redis valkey memcached mongodb elasticsearch
    opensearch clickhouse duckdb kafka rabbitmq celery huey pgbouncer pgvector postgis
    timescaledb psycopg psycopg2 asyncpg kubernetes k8s kubectl docker podman terraform ansible
    nginx haproxy traefik gunicorn uvicorn python django fastapi pydantic sqlalchemy javascript
    typescript nodejs nextjs nuxt deno golang kotlin scala haskell elixir erlang clojure php
    laravel symfony dotnet graphql grpc protobuf openapi github gitlab bitbucket jenkins circleci
    linux ubuntu debian fedora centos nixos macos ios android aws gcp grafana datadog pytest mypy
    numpy scipy pytorch tensorflow jupyter matplotlib webpack npm pnpm svelte openai anthropic
    huggingface ollama chatgpt bigquery dynamodb s3 ec2 git vim neovim emacs vscode zsh cuda onnx
    wasm htmx supabase vercel netlify heroku cloudflare jira figma openssl systemd crontab
    tailscale wireguard openvpn istio linkerd airflow hadoop llvm gcc clang cmake xcode swiftui
    powershell wsl etcd minio
    """
)

# Words a number after a product is counted in, not a version of it ("PostgreSQL 16 GB").
UNITS = _words(
    """
    gb mb kb tb gib mib kib ms s sec secs second seconds min mins minute minutes h hr hrs hour
    hours day days week weeks month months year years times x percent users rows connections
    requests replicas nodes cores cpus workers threads items
    """
)

# Words a number after is no version of: "version 2.3", "port 5433", "Chapter 3.2".
NOT_PRODUCTS = (
    _words("version release ver rev build patch port step section chapter page figure table item")
    | STOPWORDS
    | COMMON_INITIAL
)
ABBREVIATIONS = _words("mr mrs ms mx dr prof st mt jr sr vs etc inc ltd co fig approx e.g i.e")
CONNECTORS = _words("of de van von der den da di du del della la le al bin ibn the y")
NOT_PLURAL = _words(
    """
    status redis kubernetes postgres https devops ops macos jenkins windows news series species
    lens always perhaps williams roberts edwards richards peters stevens jacobs adams phillips
    evans collins owens matthews daniels andrews davies rogers stephens michaels samuels jones james
    charles hughes wales athens brussels marks sims watts
    """
)
IE_PLURALS = _words(
    """
    movies cookies zombies rookies selfies calories pies ties lies dies brownies smoothies hoodies
    newbies aunties goalies genies prairies
    """
)
NOT_HANDLES = _words(
    """
    property staticmethod classmethod dataclass override abstractmethod cached_property
    functools here channel everyone all media import keyframes charset font-face supports
    apply tailwind param return returns throws see since deprecated author version todo
    mention mentions username user example
    """
)
NOT_IDENTIFIERS = _words("utf-8 utf-16 utf-32 iso-8859-1")
# Top-level domains a bare host may end in; none that is also a common file extension (.py, .md,
# .sh, .rs, .pl, .so, .cc, .zip) or a common English word (.in, .it, .to, .be, .app, .home).
TLDS = _words(
    """
    com org net edu gov mil int io dev ai co me info biz xyz cloud tech online site tv fm ly gg uk
    ca au de fr nl ch se no dk fi es pt ru jp cn kr br mx nz eu ie internal local lan corp
    """
)

FILE_EXTENSIONS = _words(
    """
    md txt rst py pyi ipynb js mjs ts tsx jsx json jsonl yaml yml toml cfg ini conf env sh bash zsh
    rs go rb java kt c h cc cpp hpp cs php html htm css scss sql csv tsv log lock pdf png jpg jpeg
    gif svg webp zip gz tgz tar whl xml lua swift
    """
)
