"""Document check `doc_duplicate_translation`: the same translation for different sources, exact or
near (MinHash), e.g. a generic or hallucinated text put out for several documents (mteb#3708).

Map, for each side: its first MAX_CHARS characters, ASCII whitespace removed and ASCII letters
lower-cased; their exact hash (with the full length) and a one-permutation MinHash of their 8-byte
shingles (all of a short text's, a content-defined eighth of a long one's) in `BINS` bins of 16
bits, computed over the whole batch in numpy. Reduce: LSH banding of the targets (`BANDS` bands of
`BINS / BANDS` bins): documents sharing a band are candidates, each verified against its band's
representative (the smallest id hash) by the share of equal bins (>= `similarity`); exact copies
join too; connected components are the groups. In a group, the members whose source is unlike the
others' (MinHash of the sources < `similarity - margin`, not in the one largest cluster of alike
sources) raise the flag: near-identical sources translated alike are no artifact, and of three
documents sharing a translation the one whose source differs is the odd one out (of two with
different sources: both, unless one has a length ratio out of proportion, robust z > LENGTH_Z: that
one, e.g. a truncated translation that became another's). Memory while reducing: 3 x 8 (hashes) + 4
(length ratio) + 2 x 2 x BINS (signatures) = 156 bytes per document (fewer source bins, tried, flag
more innocent documents); the stats keep the grouped documents only. The span is the start of the
shared translation. No language pack needed.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .base import DocCheck, Docs, Result, span_at

BINS = 32
BANDS = 8
SHINGLE = 8
MAX_CHARS = 1 << 16
"""Characters of a text that are hashed (with its full length): memory stays bounded for a huge text."""
HEAD = 120
"""Characters of the start of a translation kept as a flagged duplicate's span."""
SHORT = 512
"""A text of fewer bytes keeps all its shingles, a longer one an eighth (chosen by their hash)."""
VERIFY = 1 << 15
"""Candidate pairs compared at once while reducing."""
EMPTY = np.uint16(0xFFFF)
"""A bin no shingle fell into (a short text)."""
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a fixed, well-spread 64-bit hash of each value."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[65:91] += 32


def _compact(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, offsets) of the texts with ASCII whitespace removed and ASCII letters lower-cased:
    a re-wrapped or re-cased copy is still a copy."""
    texts = texts.cast(pa.large_string()) if texts.type != pa.large_string() else texts
    n = len(texts)
    _, offsets_buffer, data_buffer = texts.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[texts.offset:texts.offset + n + 1]
    data = (np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0]:offsets[-1]] if data_buffer is not None
            else np.zeros(0, dtype=np.uint8))
    kept = np.flatnonzero(~_SPACE[data])
    return _LOWER[data[kept]], np.searchsorted(kept, offsets - offsets[0])


def exact_hashes(data: np.ndarray, offsets: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """64-bit blake2b of each compacted text and its full length in characters (the same in every
    process, unlike hash())."""
    raw = data.tobytes()
    return np.array([int.from_bytes(hashlib.blake2b(raw[a:b] + str(n).encode(), digest_size=8).digest(), "little",
                                    signed=True)
                     for a, b, n in zip(offsets[:-1].tolist(), offsets[1:].tolist(), chars.tolist())], dtype=np.int64)


def id_hashes(ids: list[str]) -> np.ndarray:
    return np.array([int.from_bytes(hashlib.blake2b(i.encode(), digest_size=8).digest(), "little", signed=True)
                     for i in ids], dtype=np.int64)


def signatures(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(n, BINS) uint16 one-permutation MinHash of each compacted text's 8-byte shingles (all of a
    short text's, a content-defined eighth of a long one's); a text's row depends on its bytes only."""
    n = len(offsets) - 1
    out = np.full((n, BINS), np.iinfo(np.uint64).max, dtype=np.uint64)
    count = len(data) - SHINGLE + 1
    if count > 0:
        windows = np.ndarray((count,), dtype="<u8", buffer=np.ascontiguousarray(data).tobytes(), strides=(1,))
        lengths = np.diff(offsets)
        hashes = _mix(windows.astype(np.uint64))
        # the sample: a hash's top bits (its bin: the low bits); a short text's windows all count
        short = np.repeat(lengths < SHORT, lengths)[:count]
        start = np.flatnonzero(short | ((hashes >> np.uint64(61)) == 0))
        doc = np.searchsorted(offsets, start, side="right") - 1
        inside = start + SHINGLE <= offsets[doc + 1]  # a window must lie inside its own text
        doc, hashes = doc[inside], hashes[start[inside]]
        np.minimum.at(out, (doc, (hashes % np.uint64(BINS)).astype(np.int64)), hashes // np.uint64(BINS))
    filled = out != np.iinfo(np.uint64).max
    sig = (out & np.uint64(0xFFFF)).astype(np.uint16)
    sig[sig == EMPTY] = EMPTY - 1
    sig[~filled] = EMPTY
    return sig


class DuplicateAccumulator:
    def __init__(self, similarity: float, margin: float) -> None:
        self.similarity, self.margin = similarity, margin
        self.parts: list[tuple[np.ndarray, ...]] = []

    def _columns(self) -> list[np.ndarray]:
        """The accumulated columns, concatenated and sorted by id hash one at a time (the peak is one
        column above the rows' own 156 bytes): every result is independent of the batches' order."""
        parts = [list(part) for part in self.parts]
        self.parts = []
        columns, order = [], None
        for k in range(len(parts[0])):
            column = np.concatenate([part[k] for part in parts])
            for part in parts:
                part[k] = None
            order = np.argsort(column, kind="stable") if order is None else order  # column 0: the id hashes
            columns.append(column[order])
            del column
        return columns

    def _verified(self, candidates, target: np.ndarray, tsig: np.ndarray):
        """The candidate (member, representative) pairs whose translations are alike, with whether they
        are exact copies; compared VERIFY pairs at a time, so a corpus full of shared passages (every
        band a candidate) costs a few MB, not 2 x 64 bytes per candidate pair at once."""
        kept = [(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))]
        for members, reps in candidates:
            for s in range(0, len(members), VERIFY):
                a, b = members[s:s + VERIFY], reps[s:s + VERIFY]
                same = target[a] == target[b]
                ok = np.where(same, 1.0, _similarity(tsig[a], tsig[b])) >= self.similarity
                kept.append((a[ok], b[ok], same[ok]))
        return (np.concatenate([k[i] for k in kept]) for i in range(3))

    def add(self, mapped: pa.Table) -> None:
        keep = ~mapped.column("doc_empty_target").to_numpy(zero_copy_only=False)
        columns = [mapped.column(c).to_numpy(zero_copy_only=False)[keep]
                   for c in ("_id_hash", "_target_hash", "_source_hash")]
        ratio = mapped.column("doc_length_log_ratio").to_numpy(zero_copy_only=False)[keep].astype(np.float32)
        target, source = (np.frombuffer(b"".join(mapped.column(c).to_pylist()), dtype=np.uint16)
                          .reshape(-1, BINS)[keep] for c in ("_target_minhash", "_source_minhash"))
        self.parts.append((*columns, ratio, target, source))

    def finish(self) -> "DuplicateGroups":
        if not self.parts:
            return DuplicateGroups({})
        ids, target, source, ratio, tsig, ssig = self._columns()
        if not len(ids):
            return DuplicateGroups({})
        finite = ratio[np.isfinite(ratio)]
        median = np.median(finite) if len(finite) else 0.0
        mad = np.median(np.abs(finite - median)) if len(finite) else 0.0
        length_z = np.abs(ratio - median) / max(1.4826 * mad, 0.05)
        n = len(ids)
        candidates = [_runs_to_representative(target)]
        bands = np.ascontiguousarray(tsig).view(np.uint64)
        width = BINS // BANDS
        unique = (np.iinfo(np.uint64).max - np.arange(n, dtype=np.uint64))  # a band of empty bins matches nothing
        for b in range(BANDS):
            full = ~(tsig[:, b * width:(b + 1) * width] == EMPTY).all(axis=1)
            candidates.append(_runs_to_representative(np.where(full, bands[:, b], unique)))
        a, b, same_target = self._verified(candidates, target, tsig)
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
        _, label = connected_components(graph, directed=False)
        sizes = np.bincount(label, minlength=1)
        first = np.full(len(sizes), -1, dtype=np.int64)
        grouped = np.flatnonzero(sizes[label] > 1)
        for i in grouped[::-1]:  # rows are in id-hash order: a group's key is its smallest id hash
            first[label[i]] = ids[i]
        flagged = np.zeros(n, dtype=bool)
        by_group = grouped[np.argsort(label[grouped], kind="stable")]
        for members in np.split(by_group, np.flatnonzero(np.diff(label[by_group])) + 1) if len(by_group) else []:
            odd = _odd_ones_out(source[members], ssig[members], self.similarity - self.margin)
            # of documents that cannot be told apart by their sources, one with an abnormal length
            # ratio (a truncated or padded translation) is the odd one out
            abnormal = odd & (length_z[members] > LENGTH_Z)
            flagged[members] = abnormal if abnormal.any() else odd
        exact = np.zeros(n, dtype=bool)
        exact[a[same_target]] = exact[b[same_target]] = True
        return DuplicateGroups({int(ids[i]): (int(first[label[i]]), int(sizes[label[i]]), bool(flagged[i]), bool(exact[i]))
                                for i in grouped})


LENGTH_Z = 3.0
"""Robust z of the log length ratio above which a group member's translation is out of proportion."""
MAX_GROUP = 500
"""A larger group is judged on a sample of its members' sources (the first MAX_GROUP by id hash)."""


def _odd_ones_out(source: np.ndarray, sig: np.ndarray, alike: float) -> np.ndarray:
    """Which members of a group of (near-)identical translations have a source unlike the rest's:
    each member's source is compared with every other's (exact hash, else MinHash >= `alike`); a
    member is flagged when some source in the group differs from its own and its own is not in
    the one largest cluster of alike sources (a pair with different sources: both)."""
    k = len(source)
    ref = slice(0, min(k, MAX_GROUP))
    same = (source[:, None] == source[None, ref]) | (
        _similarity(np.repeat(sig, len(source[ref]), axis=0), np.tile(sig[ref], (k, 1))).reshape(k, -1) >= alike)
    support = same.sum(axis=1)
    top = support.max()
    unique_top = (support == top).sum() <= top
    return (support < len(source[ref])) & ((support < top) | (top == 1) | ~unique_top)


def _runs_to_representative(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(member, representative) for every row whose key another row shares; the representative is
    the run's first row (rows are in id-hash order, so the smallest id hash)."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    start = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]
    run = np.cumsum(start) - 1
    rep = order[np.flatnonzero(start)][run]
    member = order != rep
    return order[member], rep[member]


def _similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Share of equal bins among those not empty on both sides (the MinHash Jaccard estimate)."""
    both_empty = (a == EMPTY) & (b == EMPTY)
    equal = ((a == b) & ~both_empty).sum(axis=1)
    return equal / np.maximum((~both_empty).sum(axis=1), 1)


class DuplicateGroups:
    """id hash -> (group key, group size, flagged, exact copy) for the grouped documents."""

    def __init__(self, groups: dict[int, tuple[int, int, int, bool]]) -> None:
        self.groups = groups

    def public(self) -> dict:
        return {"grouped_documents": len(self.groups), "groups": len({g[0] for g in self.groups.values()}),
                "flagged_documents": sum(1 for g in self.groups.values() if g[2])}


def _rows(sig: np.ndarray) -> np.ndarray:
    raw = sig.tobytes()
    width = BINS * 2
    return np.array([raw[k:k + width] for k in range(0, len(raw), width)], dtype=object)


class DuplicatesCheck(DocCheck):
    name = "doc_duplicate_translation"
    order = 70
    flags = {"doc_duplicate_translation": "The same translation (exact, or near: MinHash + LSH) serves documents "
                                          "whose sources differ."}
    categories = {"doc_duplicate_translation": "mistranslation"}
    weights = {"doc_duplicate_translation": 0.6}
    columns = {"_id_hash": pa.int64(), "_target_hash": pa.int64(), "_source_hash": pa.int64(),
               "_target_minhash": pa.binary(), "_source_minhash": pa.binary(), "_target_head": pa.string()}
    scored = {"doc_duplicate_group_size": pa.float64(), "doc_duplicate_group": pa.int64()}
    params = {"similarity": 0.8, "margin": 0.3}

    def map(self, docs: Docs, ctx) -> Result:
        target, source = (_compact(pc.utf8_slice_codeunits(docs.arrow(f"{side}_text"), 0, MAX_CHARS))
                          for side in ("target", "source"))
        return Result({"_id_hash": id_hashes(docs.table.column("id").to_pylist()),
                       "_target_hash": exact_hashes(*target, docs.target_chars),
                       "_source_hash": exact_hashes(*source, docs.source_chars),
                       "_target_minhash": _rows(signatures(*target)), "_source_minhash": _rows(signatures(*source)),
                       "_target_head": pc.utf8_slice_codeunits(docs.arrow("target_text"), 0, HEAD)
                       .to_numpy(zero_copy_only=False)},
                      [[] for _ in range(len(docs))])

    def accumulator(self, ctx) -> DuplicateAccumulator:
        return DuplicateAccumulator(self.param(ctx, "similarity"), self.param(ctx, "margin"))

    def score(self, mapped: pa.Table, stats, ctx) -> Result:
        groups: DuplicateGroups = stats.checks[self.name]
        n = mapped.num_rows
        size, key = np.zeros(n), np.zeros(n, dtype=np.int64)
        findings = [[] for _ in range(n)]
        heads = None
        for i, h in enumerate(mapped.column("_id_hash").to_numpy()):
            group = groups.groups.get(int(h))
            if group is None:
                continue
            key[i], size[i] = group[0], group[1]
            if group[2]:
                kind = "identical to" if group[3] else "near-identical (MinHash) to"
                heads = heads if heads is not None else mapped.column("_target_head").to_pylist()
                findings[i] = [self.finding(f"{ctx.pair.target.upper()} is {kind} the translation of another document "
                                            f"whose {ctx.pair.source.upper()} source is not alike (group "
                                            f"{group[0] & 0xFFFFFFFFFFFFFFFF:016x} of {group[1]} documents)",
                                            [span_at(ctx.pair.target, 0, heads[i], self.name)] if heads[i] else ())]
        return Result({"doc_duplicate_group_size": size, "doc_duplicate_group": key}, findings)
