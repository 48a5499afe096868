"""The shared swaps: drawn once per evaluation, read by every null of no change and every randomization test.

docs/mathematics.md §7. The swap null of a calibrated gate (:mod:`pytest_bvtest.stats.calibration`) swaps the
candidate's and the reference's scores on topic ``j`` in swap ``b``, and the randomization test of a comparison
(:func:`pytest_bvtest.stats.inference.randomization_tests`) negates the difference on topic ``j`` in assignment
``b``, both exactly when ``numpy.random.default_rng(seed).random((count, n))[b, j] < 0.5`` (every ``2**n``
assignment in binary order when they are enumerated). With the same topics and seed, row ``b`` is the same draw in
both, whatever the count: a shorter draw is the first rows of a longer one.

So an evaluation draws its swaps once (:func:`read_swaps`): every reader that asks for the same topics and seed
(the same topics alone, when enumerated) reads the same blocks, and each block is multiplied once with the
per-topic columns of every reader (a gate's sums, :mod:`pytest_bvtest.stats.sums`; a comparison's differences), in
one matrix product. Drawing 10,000 swaps of 7,000 topics costs about 0.25 s; each gate and each set of comparisons
drew them anew before, and unpacked and multiplied them on its own.

The same topics and seed draw the same swaps in every evaluation, so a :class:`SwapStore` (the score cache's folder)
keeps them between evaluations as packed bits with their digest: 10,000 swaps of 7,000 topics are 8.7 MB, unpacked in
0.06 s. Stored swaps whose bytes do not match their digest are drawn again, and the name holds numpy's version
(whose generator draws them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

# Cells (swaps x topics) drawn at once: a block of 10,000 swaps of 7,000 topics is 150 swaps (8 MB), which a
# product with a few dozen columns reads at cache speed (blocks 4 times larger took 10 to 40% longer).
_BLOCK_CELLS = 1 << 20
# ... but never fewer swaps than this: a product of a few swaps reads every topic's columns for only those, and at
# 200,000 topics (5 swaps a block) the products took twice as long (10 s against 5 s; 32 swaps of 1,000,000 topics
# are 256 MB).
_FEWEST_SWAPS = 32

# The most swaps a store keeps, as packed bits: 10,000 swaps of 50,000 topics (larger draws are drawn each time).
_MOST_STORED_BYTES = 64 << 20

_DIGEST_BYTES = 32

# The IEEE-754 bits of 1.0: a uint64 0/1 times these is the float64 0.0/1.0.
_BITS_OF_ONE = np.uint64(0x3FF0000000000000)


@dataclass(frozen=True)
class Draws:
    """Which swaps a reader reads: ``count`` rows over ``topics`` topics drawn with ``seed``, or every ``2**topics``
    assignment when ``exact`` (``count`` is then ``2**topics`` and the seed plays no part)."""

    topics: int
    count: int
    seed: int
    exact: bool

    @property
    def stream(self) -> tuple[int, int, bool]:
        """What makes two draws the same rows: their topics and seed, or their topics alone when enumerated."""
        return (self.topics, 0 if self.exact else self.seed, self.exact)


class SwapReader(Protocol):
    """What reads the shared swaps: its :class:`Draws`, the per-topic ``columns`` whose products with each swap it
    reads (``(topics, q)``; ``None`` when it reads the swaps themselves), and ``read``, called once per block in
    order."""

    @property
    def draws(self) -> Draws: ...

    @property
    def columns(self) -> np.ndarray | None: ...

    def read(self, first: int, swapped: np.ndarray, products: np.ndarray | None) -> None:
        """Read swaps ``first`` to ``first + len(swapped) - 1``: ``swapped`` float64 0/1 ``(rows, topics)`` (1 swaps
        the topic), ``products`` the block times :attr:`columns` (``None`` without columns)."""
        ...


class SwapStore(Protocol):
    """Where drawn swaps are kept between evaluations, as bytes by name (the score cache's folder)."""

    def load_swaps(self, name: str) -> bytes | None: ...

    def save_swaps(self, name: str, data: bytes) -> None: ...


def read_swaps(readers: Sequence[SwapReader], store: SwapStore | None = None, *, keep_products: bool = True) -> None:
    """Draw the swaps of every reader once (or read them from ``store``) and give each its blocks, with its columns'
    products.

    Readers of the same stream (:attr:`Draws.stream`) share one pass over as many swaps as the longest asks for;
    a block is multiplied once with all their columns side by side, and each reader gets its own columns' part
    (equal to its own product to rounding: each column of a matrix product is the same dot products, which BLAS may
    sum in an order that depends on the product's shape). A column's products are a function of its draws and its
    values alone, so ``store`` keeps them too (:class:`_StoredColumns`): a check whose scores did not change reads
    them instead of multiplying 10,000 swaps by every column again, and a new candidate multiplies only its own
    columns, not those of two baselines' comparison (unless ``keep_products`` is false: columns that are never read
    twice, such as a plausible verdict's gradings, would only fill the store).
    """
    streams: dict[tuple[int, int, bool], list[SwapReader]] = {}
    for reader in readers:
        streams.setdefault(reader.draws.stream, []).append(reader)
    for together in streams.values():
        draws = max((reader.draws for reader in together), key=lambda drawn: drawn.count)
        stored = [_StoredColumns(reader, store if keep_products else None) for reader in together]
        widths = [len(held.missing) for held in stored]
        offsets = np.concatenate([[0], np.cumsum(widths)])
        columns = (
            np.ascontiguousarray(np.hstack([held.columns_missing for held in stored if len(held.missing)]))
            if sum(widths)
            else None
        )
        first = 0
        block = max(_FEWEST_SWAPS, _BLOCK_CELLS // draws.topics)
        for swapped in _stored_or_drawn(draws, block, store):
            products = None if columns is None else swapped @ columns
            for reader, held, start, stop in zip(together, stored, offsets[:-1], offsets[1:]):
                rows = min(len(swapped), reader.draws.count - first)
                if rows > 0:
                    computed = None if products is None else products[:rows, start:stop]
                    reader.read(first, swapped[:rows], held.part(first, rows, computed))
            first += len(swapped)
        for held in stored:
            held.save()


class _StoredColumns:
    """A reader's columns' products of all its swaps as far as ``store`` holds them, each column stored alone, named
    by the digest of its draws and its values (a reader without columns, or of enumerated draws, which are few and
    cheap, stores nothing): which columns are :attr:`missing` and must be multiplied, and each block's products put
    together from both (:meth:`part`); :meth:`save` stores those multiplied."""

    def __init__(self, reader: SwapReader, store: SwapStore | None) -> None:
        self.draws, self.store = reader.draws, store
        values = reader.columns
        self.reads_products = values is not None
        self.width = 0 if values is None else values.shape[1]
        self.names: list[str | None] = [None] * self.width
        found: list[np.ndarray | None] = [None] * self.width
        if store is not None and values is not None and not reader.draws.exact:
            values = np.ascontiguousarray(values, dtype=np.float64)
            self.names = [self._name(values[:, j]) for j in range(self.width)]
            found = [self._load(name) for name in self.names]  # type: ignore[arg-type]
        self.missing = np.array([j for j, held in enumerate(found) if held is None], dtype=np.int64)
        self.held = np.flatnonzero([held is not None for held in found])
        self.columns_missing = None if values is None else values[:, self.missing]
        self.found = np.column_stack([held for held in found if held is not None]) if len(self.held) else None
        self._computed: list[np.ndarray] = []

    def part(self, first: int, rows: int, computed: np.ndarray | None) -> np.ndarray | None:
        """The products of swaps ``first`` to ``first + rows - 1`` with every column, from those multiplied in this
        block (``computed``, the missing columns') and those stored."""
        if not self.reads_products:
            return None
        if self.width == 0:  # columns of no width (two identical systems' differences): products of no width
            return np.empty((rows, 0))
        if self.found is None:
            if self.store is not None:
                self._computed.append(computed)  # type: ignore[arg-type]
            return computed
        if not len(self.missing):
            return self.found[first : first + rows]
        part = np.empty((rows, self.width))
        part[:, self.held] = self.found[first : first + rows]
        part[:, self.missing] = computed
        self._computed.append(computed)  # type: ignore[arg-type]
        return part

    def save(self) -> None:
        """Store the columns multiplied (all of their swaps, each within the store's size bound)."""
        if self.store is None or not self._computed or self.draws.count * 8 > _MOST_STORED_BYTES:
            return
        computed = np.concatenate(self._computed)
        if len(computed) != self.draws.count:
            return
        for position, j in enumerate(self.missing.tolist()):
            name = self.names[j]
            if name is not None:
                values = np.ascontiguousarray(computed[:, position], dtype="<f8").tobytes()
                self.store.save_swaps(name, values + hashlib.blake2b(values, digest_size=_DIGEST_BYTES).digest())

    def _name(self, column: np.ndarray) -> str:
        digest = hashlib.blake2b(repr(self.draws).encode(), digest_size=_DIGEST_BYTES)
        digest.update(np.ascontiguousarray(column, dtype="<f8").data)
        return f"products-{digest.hexdigest()}-numpy{np.__version__}.f8"

    def _load(self, name: str) -> np.ndarray | None:
        data = self.store.load_swaps(name)  # type: ignore[union-attr]
        if data is None or len(data) != self.draws.count * 8 + _DIGEST_BYTES:
            return None
        values, digest = data[:-_DIGEST_BYTES], data[-_DIGEST_BYTES:]
        if hashlib.blake2b(values, digest_size=_DIGEST_BYTES).digest() != digest:
            return None
        return np.frombuffer(values, dtype="<f8")


def _stored_or_drawn(draws: Draws, block: int, store: SwapStore | None) -> Iterator[np.ndarray]:
    """The blocks of :func:`topic_assignments` for ``draws``: unpacked from ``store`` when it holds them intact, else
    drawn (and stored, when it takes them)."""
    drawn = topic_assignments(draws.topics, draws.count, draws.seed, exact=draws.exact, block=block)
    width = -(-draws.topics // 8)
    if store is None or draws.exact or draws.count * width > _MOST_STORED_BYTES:
        yield from drawn
        return
    name = f"{draws.topics}x{draws.count}-seed{draws.seed}-numpy{np.__version__}.bits"
    data = store.load_swaps(name)
    if data is not None and len(data) == draws.count * width + _DIGEST_BYTES:
        bits, digest = data[:-_DIGEST_BYTES], data[-_DIGEST_BYTES:]
        if hashlib.blake2b(bits, digest_size=_DIGEST_BYTES).digest() == digest:
            packed = np.frombuffer(bits, dtype=np.uint8).reshape(draws.count, width)
            for first in range(0, draws.count, block):
                yield np.unpackbits(packed[first : first + block], axis=1, count=draws.topics).astype(np.float64)
            return
    packed_blocks = []
    for swapped in drawn:
        yield swapped
        packed_blocks.append(np.packbits(swapped.astype(np.uint8), axis=1))
    bits = np.concatenate(packed_blocks).tobytes()
    store.save_swaps(name, bits + hashlib.blake2b(bits, digest_size=_DIGEST_BYTES).digest())


def _negated_topics(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """``(rng.random(shape) < 0.5)`` as float64 0/1, drawing the same numbers from ``rng``.

    For numpy's default PCG64, ``random()`` is ``(next_uint64 >> 11) * 2**-53``, which is below 0.5
    exactly when the top bit of the 64-bit draw is 0; reading the raw draws skips the conversion, and
    the inverted top bit times the bits of 1.0 is the float itself, written in place (half the time
    of a comparison and a cast).
    """
    if type(rng.bit_generator) is not np.random.PCG64:
        return (rng.random(shape) < 0.5).astype(np.float64)
    raw = rng.bit_generator.random_raw(shape[0] * shape[1]).reshape(shape)
    np.invert(raw, out=raw)
    np.right_shift(raw, np.uint64(63), out=raw)
    np.multiply(raw, _BITS_OF_ONE, out=raw)
    return raw.view(np.float64)


def topic_assignments(topics: int, count: int, seed: int, *, exact: bool, block: int) -> Iterator[np.ndarray]:
    """Blocks of float64 0/1 rows ``(rows, topics)``: which topics a paired resampling swaps (or sign-flips).

    ``exact``: all ``2**topics`` assignments in binary order (row ``k`` swaps topic ``j`` when bit
    ``j`` of ``k`` is set; ``count`` and ``seed`` unused). Otherwise ``count`` rows of
    ``numpy.random.default_rng(seed).random((count, topics)) < 0.5``, each topic independently with
    probability 1/2; the blocks only bound memory and never change the stream. Floats, so that a
    block times a topic vector is one matrix product.
    """
    if exact:
        every = 2**topics
        for first in range(0, every, block):
            numbers = np.arange(first, min(every, first + block))
            yield (numbers[:, np.newaxis] >> np.arange(topics) & 1).astype(np.float64)
        return
    rng = np.random.default_rng(seed)
    for first in range(0, count, block):
        yield _negated_topics(rng, (min(block, count - first), topics))
