"""Cross-rank matching per process group: where the ranks first disagree, and who is behind.

Collectives are matched by group and `collective_seq_id`: every member must issue the same op,
with the same sizes and dtypes, at the same sequence number (a coalesced call is the list of
ops that share one). The first sequence number where they do not is reported, as one of:

- missing: members that never issued it while others did (their last one is lower);
- op / size / dtype: members that issued something else there (the minority is the culprit);
- state: members still `scheduled` or `started` where the others `completed` (NCCL only:
  gloo records every entry as scheduled, so its states say nothing).

After the first disagreement in a group the pairing of later calls is unreliable, so the group
stops there. Sends and receives are matched per ordered pair of global ranks, the k-th send
with the k-th receive in `p2p_seq_id` order, when neither side's ring buffer wrapped.

`Matcher` is fed one rank's dump at a time and keeps only what matching needs. Ranks whose
calls in a group are identical share one history (a thousand data-parallel ranks are a handful
of histories), and only two ranks of each keep their records for evidence, so a thousand ranks'
dumps never sit in memory together and matching walks histories, not ranks. Pure: no I/O; the
order dumps arrive in does not change the result.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from enum import StrEnum

from hyperpod_nccl.flight_recorder.model import Call, Frame, GroupConfig, RankDump, State, Trace, Vote
from hyperpod_nccl.rankset import compress

DEFAULT_GROUP = "0"
_EXEMPLARS = 2  # sightings kept per distinct call at one sequence number: evidence, not a census
# Ops whose sizes legitimately differ across ranks (uneven splits, a root that alone gathers).
_INPUTS_MAY_DIFFER = frozenset(
    {"all_to_all", "all_to_all_single", "all_to_all_v_single", "scatter", "reduce_scatter_v"}
)
_OUTPUTS_MAY_DIFFER = frozenset(
    {"all_to_all", "all_to_all_single", "all_to_all_v_single", "gather", "all_gather_v"}
)


class Kind(StrEnum):
    MISSING = "missing"
    OP = "op"
    SIZE = "size"
    DTYPE = "dtype"
    STATE = "state"
    P2P_UNMATCHED = "p2p_unmatched"


@dataclass(frozen=True, slots=True)
class Sighting:
    """Where one rank recorded a call: the evidence a finding quotes."""

    rank: int
    source: str
    record_id: int
    seq: int
    calls: tuple[Call, ...]
    state: State
    stack: tuple[Frame, ...]
    created_ns: int | None


@dataclass(frozen=True)
class Group:
    name: str
    desc: str
    members: tuple[int, ...]
    inferred: bool  # members read off the dumps: pg_config does not list the group (gloo)

    @property
    def label(self) -> str:
        described = self.desc not in ("", "undefined") and self.desc != self.name
        return f"{self.desc} (group {self.name})" if described else f"group {self.name}"


@dataclass(frozen=True)
class Issued:
    """One side of a disagreement: the ranks that issued the same thing, with a sighting or two."""

    calls: tuple[Call, ...]
    state: State
    ranks: tuple[int, ...]
    sightings: tuple[Sighting, ...]

    @property
    def shape(self) -> str:
        return " + ".join(call.shape for call in self.calls) or "nothing"


@dataclass(frozen=True)
class Disagreement:
    kind: Kind
    group: Group
    seq: int
    culprits: tuple[int, ...]
    expected: Issued  # what the others issued there
    found: tuple[Issued, ...]  # what the culprits issued there (for missing: their last call in the group)
    created_ns: int | None  # when the first rank issued it

    @property
    def others(self) -> tuple[int, ...]:
        return self.expected.ranks


@dataclass(frozen=True)
class Progress:
    """How far one rank got in the default group: what the watchdog's lines also say."""

    rank: int
    source: str
    enqueued: int | None
    started: int | None
    completed: int | None
    last: Sighting | None
    states_known: bool

    @property
    def idle(self) -> bool:
        return self.enqueued is not None and self.completed is not None and self.enqueued <= self.completed


@dataclass
class Analysis:
    world: list[int]
    dumped: list[int]
    missing_dumps: list[int]
    groups: list[Group]
    disagreements: list[Disagreement]
    behind_everywhere: list[int]
    all_inside: list[tuple[Group, int, list[int]]]  # groups whose members all wait in one collective
    progress: dict[int, Progress]
    limits: list[str]

    @property
    def decisive(self) -> Disagreement | None:
        return self.disagreements[0] if self.disagreements else None


@dataclass(slots=True)
class _Window:
    """One rank's span of collective sequence numbers in one group."""

    first: int
    last: int
    last_sighting: Sighting


@dataclass(slots=True)
class _Exemplar:
    """A rank whose records stand for its history in evidence."""

    rank: int
    source: str
    trace: Trace
    stacks: list[tuple[Frame, ...]]


@dataclass(slots=True)
class _History:
    """Ranks whose calls in one group are identical, sequence number for sequence number."""

    seqs: array[int]
    votes: array[int]  # global vote ids
    ranks: array[int] = field(default_factory=lambda: array("i"))
    exemplars: list[_Exemplar] = field(default_factory=list)
    states_known: bool = True
    positions: dict[int, int] = field(default_factory=dict)  # seq → index, filled when matching

    def at(self, seq: int) -> int | None:
        if not self.positions:
            self.positions = {s: i for i, s in enumerate(self.seqs)}
        return self.positions.get(seq)

    def sightings(self, index: int, votes: list[Vote]) -> list[Sighting]:
        calls, state = votes[self.votes[index]]
        return [_sighting(e.rank, e.source, e.trace, index, calls, state, e.stacks) for e in self.exemplars]


@dataclass(slots=True)
class _Rank:
    rank: int
    source: str
    states_known: bool
    complete_history: bool  # the ring buffer never wrapped: record 0 is still there
    windows: dict[str, _Window] = field(default_factory=dict)
    status: dict[str, tuple[int | None, int | None, int | None]] = field(default_factory=dict)
    p2p: dict[str, tuple[Trace, list[int], list[tuple[Frame, ...]]]] = field(default_factory=dict)
    progress: Progress | None = None


Side = dict[int, list[_History]]  # vote id → the histories that issued it at one sequence number


class Matcher:
    def __init__(self) -> None:
        self._vote_ids: dict[Vote, int] = {}
        self._votes: list[Vote] = []
        self._histories: dict[str, dict[tuple[bytes, bytes], _History]] = {}
        self._ranks: dict[int, _Rank] = {}
        self._configs: dict[str, set[int]] = {}
        self._descs: dict[str, tuple[int, str]] = {}  # group → (rank that said it, desc)
        self._world: set[int] = set()
        self._limits: dict[str, list[int]] = {}

    @property
    def ranks(self) -> int:
        """How many ranks' dumps were taken."""
        return len(self._ranks)

    def add(self, dump: RankDump) -> None:
        rank = dump.rank
        if rank is None:
            self._note("the file name carries no rank number, so the dump was not used", -1, dump.source)
            return
        if rank in self._ranks:
            self._note(f"a second dump for the same rank ({dump.source}) was not used", rank)
            return
        for note in dump.limits:
            self._note(note, rank)
        if dump.entries and not dump.states_known and dump.backend == "gloo":
            self._note("gloo records every entry as scheduled: states and times say nothing", rank)
        complete = dump.earliest_record in (None, 0)
        if not complete:
            self._note("its ring buffer wrapped: the oldest calls are gone", rank)
        info = _Rank(rank, dump.source, dump.states_known, complete)
        self._ranks[rank] = info
        self._take_configs(dump)
        ids = [self._vote_id(vote) for vote in dump.votes]
        for group, trace in dump.collectives.items():
            self._describe(group, trace.desc, rank)
            if len(trace):
                self._take_trace(info, trace, array("i", map(ids.__getitem__, trace.votes)), dump.stacks)
        for group, trace in dump.p2p.items():
            self._describe(group, trace.desc, rank)
            info.p2p[group] = (trace, ids, dump.stacks)
        for group, status in dump.status.items():
            info.status[group] = (status.enqueued, status.started, status.completed)
        info.progress = self._progress(info)

    def _vote_id(self, vote: Vote) -> int:
        found = self._vote_ids.get(vote)
        if found is None:
            found = self._vote_ids[vote] = len(self._votes)
            self._votes.append(vote)
        return found

    def _describe(self, group: str, desc: str, rank: int) -> None:
        """Keep the lowest rank's description, so the order dumps arrive in changes nothing."""
        if desc and (group not in self._descs or (rank, desc) < self._descs[group]):
            self._descs[group] = (rank, desc)

    def _note(self, note: str, rank: int, source: str | None = None) -> None:
        key = f"{source}: {note}" if source else note
        self._limits.setdefault(key, []).append(rank)

    def _take_configs(self, dump: RankDump) -> None:
        for config in dump.configs.values():
            name = DEFAULT_GROUP if _is_gloo_world(config) else config.name
            if config.ranks:
                self._configs.setdefault(name, set()).update(config.ranks)
                if name == DEFAULT_GROUP:
                    self._world.update(config.ranks)
            if config.desc:
                self._describe(name, config.desc, -1)  # pg_config before the entries' word

    def _take_trace(
        self, info: _Rank, trace: Trace, votes: array[int], stacks: list[tuple[Frame, ...]]
    ) -> None:
        histories = self._histories.setdefault(trace.group, {})
        key = (trace.seqs.tobytes(), votes.tobytes())
        history = histories.get(key)
        if history is None:
            history = histories[key] = _History(trace.seqs, votes)
        history.ranks.append(info.rank)
        history.states_known = history.states_known and info.states_known
        # The lowest ranks stand for the history, whatever order their dumps arrived in.
        history.exemplars.append(_Exemplar(info.rank, info.source, trace, stacks))
        history.exemplars.sort(key=lambda exemplar: exemplar.rank)
        del history.exemplars[_EXEMPLARS:]
        last = len(trace) - 1
        calls, state = self._votes[votes[last]]
        info.windows[trace.group] = _Window(
            trace.seqs[0],
            trace.seqs[last],
            _sighting(info.rank, info.source, trace, last, calls, state, stacks),
        )

    def result(self) -> Analysis:
        dumped = sorted(self._ranks)
        world = sorted(self._world | set(dumped))
        groups = self._groups(world)
        disagreements = [d for g in groups for d in self._collective_disagreement(g)]
        disagreements += [d for g in groups for d in self._p2p_disagreements(g)]
        disagreements.sort(key=lambda d: (d.created_ns is None, d.created_ns or 0, d.group.name, d.seq))
        return Analysis(
            world=world,
            dumped=dumped,
            missing_dumps=sorted(set(world) - set(dumped)),
            groups=groups,
            disagreements=disagreements,
            behind_everywhere=self._behind_everywhere(groups),
            all_inside=[found for g in groups if (found := self._all_inside(g))],
            progress={r: p for r, info in sorted(self._ranks.items()) if (p := info.progress)},
            limits=[
                f"{_ranks_label(ranks)}: {note}" if min(ranks) >= 0 else note
                for note, ranks in sorted(self._limits.items(), key=lambda item: (min(item[1]), item[0]))
            ],
        )

    def _groups(self, world: list[int]) -> list[Group]:
        names = (
            set(self._histories) | {g for info in self._ranks.values() for g in info.p2p} | set(self._configs)
        )
        groups = []
        for name in sorted(names, key=lambda n: (n != DEFAULT_GROUP, len(n), n)):
            members = self._configs.get(name)
            inferred = not members
            if not members:
                members = set(world) if name == DEFAULT_GROUP else self._active_in(name)
            desc = self._descs.get(name, (0, ""))[1]
            groups.append(Group(name, desc, tuple(sorted(members)), inferred))
        return groups

    def _active_in(self, name: str) -> set[int]:
        return {r for r, info in self._ranks.items() if name in info.windows or name in info.p2p}

    def _last(self, info: _Rank, group: str) -> int | None:
        """The last sequence number the rank enqueued in the group: its records or its pg_status;
        None when it cannot be known (a wrapped buffer with nothing of this group left in it)."""
        window = info.windows.get(group)
        status = info.status.get(group)
        known = [v for v in (window.last if window else None, status[0] if status else None) if v is not None]
        if known:
            return max(known)
        return 0 if info.complete_history else None

    def _collective_disagreement(self, group: Group) -> list[Disagreement]:
        histories = list(self._histories.get(group.name, {}).values())
        lasts = sorted(
            (last, r)
            for r in group.members
            if r in self._ranks and (last := self._last(self._ranks[r], group.name)) is not None
        )
        for seq in sorted(set().union(*(h.seqs for h in histories))):
            side: Side = {}
            for history in histories:
                index = history.at(seq)
                if index is not None:
                    side.setdefault(history.votes[index], []).append(history)
            # One vote: nobody issued anything else there, nobody is in another state.
            found = self._call_mismatch(group, seq, side) if len(side) > 1 else None
            if found is None:
                missing = [r for last, r in lasts[: bisect_left(lasts, (seq, -1))]]
                found = self._missing(group, seq, side, sorted(missing)) if missing else None
            if found is None and len(side) > 1:
                found = self._state_mismatch(group, seq, side)
            if found is not None:
                return [found]
        return []

    def _issued(self, seq: int, vote: int, histories: list[_History]) -> Issued:
        calls, state = self._votes[vote]
        ranks = tuple(sorted(r for h in histories for r in h.ranks))
        sightings = [s for h in histories for s in h.sightings(h.at(seq) or 0, self._votes)]
        return Issued(calls, state, ranks, tuple(sorted(sightings, key=lambda s: s.rank)[:_EXEMPLARS]))

    def _merged(self, seq: int, side: Side) -> Issued:
        """Votes that agree on the calls (their states may differ) as one side."""
        biggest = max(side, key=lambda vote: (sum(len(h.ranks) for h in side[vote]), -_lowest(side[vote])))
        first = self._issued(seq, biggest, side[biggest])
        ranks = tuple(sorted(r for histories in side.values() for h in histories for r in h.ranks))
        return Issued(first.calls, first.state, ranks, first.sightings)

    def _call_mismatch(self, group: Group, seq: int, side: Side) -> Disagreement | None:
        """Members issued different calls at `seq`: the largest side is expected, the rest are
        culprits (on a tie, the side with the lowest rank is taken as expected)."""
        by_calls: dict[tuple[Call, ...], Side] = {}
        for vote, histories in side.items():
            by_calls.setdefault(self._votes[vote][0], {})[vote] = histories
        if len(by_calls) < 2:
            return None
        sides = sorted(
            (self._merged(seq, part) for part in by_calls.values()), key=lambda s: (-len(s.ranks), s.ranks[0])
        )
        expected, found = sides[0], tuple(sides[1:])
        kinds = [_difference(expected.calls, other.calls) for other in found]
        kind = min(kinds, key=[Kind.OP, Kind.SIZE, Kind.DTYPE].index)
        culprits = tuple(sorted(r for other in found for r in other.ranks))
        return Disagreement(kind, group, seq, culprits, expected, found, _created(expected, *found))

    def _missing(self, group: Group, seq: int, side: Side, missing: list[int]) -> Disagreement:
        expected = self._merged(seq, side)
        lasts: dict[tuple[tuple[Call, ...], State, int], list[Sighting]] = {}
        for rank in missing:
            window = self._ranks[rank].windows.get(group.name)
            if window is not None:
                sighting = window.last_sighting
                lasts.setdefault((sighting.calls, sighting.state, sighting.seq), []).append(sighting)
        found = tuple(
            Issued(calls, state, tuple(s.rank for s in seen), tuple(seen[:_EXEMPLARS]))
            for (calls, state, _), seen in sorted(lasts.items(), key=lambda item: -len(item[1]))
        )
        return Disagreement(Kind.MISSING, group, seq, tuple(missing), expected, found, _created(expected))

    def _state_mismatch(self, group: Group, seq: int, side: Side) -> Disagreement | None:
        known = {vote: [h for h in histories if h.states_known] for vote, histories in side.items()}
        known = {vote: histories for vote, histories in known.items() if histories}
        states = {self._votes[vote][1] for vote in known}
        if len(states) < 2:
            return None
        most = max(states)
        expected = self._merged(seq, {v: h for v, h in known.items() if self._votes[v][1] == most})
        behind = sorted((v for v in known if self._votes[v][1] != most), key=lambda v: self._votes[v][1])
        found = tuple(self._issued(seq, vote, known[vote]) for vote in behind)
        culprits = tuple(sorted(r for issued in found for r in issued.ranks))
        return Disagreement(Kind.STATE, group, seq, culprits, expected, found, _created(expected, *found))

    def _p2p_disagreements(self, group: Group) -> list[Disagreement]:
        members = sorted(group.members)
        sends: dict[tuple[int, int], list[Sighting]] = {}
        recvs: dict[tuple[int, int], list[Sighting]] = {}
        for info in self._ranks.values():
            if group.name not in info.p2p:
                continue
            trace, ids, stacks = info.p2p[group.name]
            for index in range(len(trace)):
                calls, state = self._votes[ids[trace.votes[index]]]
                pair = _global_pair(calls[0], members)
                if pair is not None:
                    sighting = _sighting(info.rank, info.source, trace, index, calls, state, stacks)
                    (sends if calls[0].op == "send" else recvs).setdefault(pair, []).append(sighting)
        found = []
        for pair in sorted(set(sends) | set(recvs)):
            src, dst = pair
            if src not in self._ranks or dst not in self._ranks:
                continue
            if not (self._ranks[src].complete_history and self._ranks[dst].complete_history):
                self._note(f"sends to rank {dst} not matched: a ring buffer wrapped", src)
                continue
            disagreement = _pair_disagreement(group, sends.get(pair, []), recvs.get(pair, []))
            if disagreement is not None:
                found.append(disagreement)
        return found[:1]

    def _behind_everywhere(self, groups: list[Group]) -> list[int]:
        """Ranks below the furthest member on every group they belong to (two groups at least)."""
        furthest: dict[str, int] = {}
        lasts: dict[int, dict[str, int]] = {}
        for group in groups:
            for rank in group.members:
                info = self._ranks.get(rank)
                last = self._last(info, group.name) if info else None
                if last is not None:
                    lasts.setdefault(rank, {})[group.name] = last
                    furthest[group.name] = max(furthest.get(group.name, 0), last)
        return sorted(
            rank
            for rank, by_group in lasts.items()
            if len(by_group) >= 2 and all(last < furthest[g] for g, last in by_group.items())
        )

    def _all_inside(self, group: Group) -> tuple[Group, int, list[int]] | None:
        """Every dumped member started the same last collective and none completed it (NCCL)."""
        histories = list(self._histories.get(group.name, {}).values())
        if not histories:
            return None
        seq = max(h.seqs[-1] for h in histories)
        votes = {h.votes[i] for h in histories if (i := h.at(seq)) is not None}
        members = [r for r in group.members if r in self._ranks]
        ranks = sorted(r for h in histories if h.at(seq) is not None for r in h.ranks)
        if len(votes) != 1 or ranks != members or len(members) < 2:
            return None
        if self._votes[votes.pop()][1] != State.STARTED or not all(h.states_known for h in histories):
            return None
        return group, seq, ranks

    def _progress(self, info: _Rank) -> Progress | None:
        """The default group's progress: pg_status where the dump has it, else its records."""
        window = info.windows.get(DEFAULT_GROUP)
        status = info.status.get(DEFAULT_GROUP)
        if window is None and status is None:
            return None
        enqueued, started, completed = status or (None, None, None)
        history = self._history_of(info.rank, DEFAULT_GROUP)
        if enqueued is None and window is not None:
            enqueued = window.last
        if info.states_known and history is not None:
            states = [
                (seq, self._votes[vote][1]) for seq, vote in zip(history.seqs, history.votes, strict=True)
            ]
            if started is None:
                started = max((seq for seq, state in states if state >= State.STARTED), default=None)
            if completed is None:
                completed = max((seq for seq, state in states if state == State.COMPLETED), default=None)
        last = window.last_sighting if window else None
        return Progress(info.rank, info.source, enqueued, started, completed, last, info.states_known)

    def _history_of(self, rank: int, group: str) -> _History | None:
        for history in self._histories.get(group, {}).values():
            if history.ranks and history.ranks[-1] == rank:  # the one this rank was just added to
                return history
        return None


def _sighting(
    rank: int,
    source: str,
    trace: Trace,
    index: int,
    calls: tuple[Call, ...],
    state: State,
    stacks: list[tuple[Frame, ...]],
) -> Sighting:
    return Sighting(
        rank,
        source,
        trace.record_ids[index],
        trace.seqs[index],
        calls,
        state,
        stacks[trace.stacks[index]],
        trace.created[index] or None,
    )


def _lowest(histories: list[_History]) -> int:
    return min(min(h.ranks) for h in histories)


def _created(*sides: Issued) -> int | None:
    times = [s.created_ns for side in sides for s in side.sightings if s.created_ns]
    return min(times, default=None)


def _ranks_label(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(set(ranks)) == 1 else f"ranks {compress(ranks)}"


def _is_gloo_world(config: GroupConfig) -> bool:
    """gloo lists the world under an empty group name, with an empty description."""
    return config.name == "" and not config.desc


def _difference(expected: tuple[Call, ...], other: tuple[Call, ...]) -> Kind:
    if [c.op for c in expected] != [c.op for c in other]:
        return Kind.OP
    for mine, theirs in zip(expected, other, strict=True):
        if mine.op not in _INPUTS_MAY_DIFFER and mine.input_sizes != theirs.input_sizes:
            return Kind.SIZE
        if mine.op not in _OUTPUTS_MAY_DIFFER and mine.output_sizes != theirs.output_sizes:
            return Kind.SIZE
    if any(
        set(m.input_dtypes) != set(t.input_dtypes) or set(m.output_dtypes) != set(t.output_dtypes)
        for m, t in zip(expected, other, strict=True)
    ):
        return Kind.DTYPE
    return Kind.SIZE  # the same ops, sizes and dtypes may still differ in what is exempt above


def _global_pair(call: Call, members: list[int]) -> tuple[int, int] | None:
    """(sender, receiver) as global ranks; profiling names give them as ranks within the group."""
    if (
        call.src is None
        or call.dst is None
        or not (0 <= call.src < len(members) and 0 <= call.dst < len(members))
    ):
        return None
    return members[call.src], members[call.dst]


def _pair_disagreement(group: Group, sends: list[Sighting], recvs: list[Sighting]) -> Disagreement | None:
    """The k-th send from a rank to a peer pairs with the peer's k-th receive from it."""
    sends = sorted(sends, key=lambda s: s.seq)
    recvs = sorted(recvs, key=lambda s: s.seq)
    for send, recv in zip(sends, recvs, strict=False):
        if send.calls[0].input_sizes != recv.calls[0].output_sizes:
            return _p2p(Kind.SIZE, group, send, recv, culprit=recv.rank)
        if set(send.calls[0].input_dtypes) != set(recv.calls[0].output_dtypes):
            return _p2p(Kind.DTYPE, group, send, recv, culprit=recv.rank)
    if len(sends) > len(recvs):
        send = sends[len(recvs)]
        return _p2p(Kind.P2P_UNMATCHED, group, send, None, culprit=_peer(send, group))
    if len(recvs) > len(sends):
        recv = recvs[len(sends)]
        return _p2p(Kind.P2P_UNMATCHED, group, recv, None, culprit=_peer(recv, group))
    return None


def _peer(sighting: Sighting, group: Group) -> int:
    call = sighting.calls[0]
    local = call.dst if call.op == "send" else call.src
    members = sorted(group.members)
    return members[local] if local is not None and 0 <= local < len(members) else -1


def _p2p(kind: Kind, group: Group, mine: Sighting, theirs: Sighting | None, culprit: int) -> Disagreement:
    expected = Issued(mine.calls, mine.state, (mine.rank,), (mine,))
    found = () if theirs is None else (Issued(theirs.calls, theirs.state, (theirs.rank,), (theirs,)),)
    return Disagreement(kind, group, mine.seq, (culprit,), expected, found, mine.created_ns)
