"""The grouping a regroup works with: window W, group size g, capacity B and chunk size.

One :class:`Grouping` travels from the command line, a notebook or a benchmark into every
regroup (the set and bitmap references, the CPU replays, the alternatives and the GPU kernel),
so its rules are checked once, when it is made: W and the chunk size are multiples of g, and
all four are positive integers, B at most 1,048,576 pages
(docs/definitions.md#windows-and-chunks).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .inputs import PageWeaverInputError, as_capacity, positive_int


@dataclass(frozen=True)
class Grouping:
    """Window W, group size g, bitmap capacity B and prefill chunk size, validated.

    Parameters
    ----------
    window : int
        W, queries per regroup window; a multiple of ``group``.
    group : int
        g, query positions per execution group (8 for Union8).
    capacity : int
        B, bitmap capacity in pages; a (request, chunk) whose context needs more pages keeps
        the identity order.
    chunk_size : int or None
        Prefill chunk size in queries, a multiple of ``group``; None means whole requests.

    Raises
    ------
    PageWeaverInputError
        A value that is not a positive integer, or W / the chunk size not a multiple of g.

    Examples
    --------
    >>> Grouping(128)
    Grouping(window=128, group=8, capacity=512, chunk_size=None)
    """

    window: int
    group: int = 8
    capacity: int = 512
    chunk_size: int | None = None

    def __post_init__(self) -> None:
        group = positive_int(self.group, "group size g")
        window = positive_int(self.window, "window W")
        if window % group:
            raise PageWeaverInputError(
                f"window W = {window} is not a multiple of the group size g = {group}")
        chunk = self.chunk_size
        if chunk is not None:
            chunk = positive_int(chunk, "chunk size")
            if chunk % group:
                raise PageWeaverInputError(
                    f"chunk size {chunk} is not a multiple of the group size g = {group}")
        for name, value in (("window", window), ("group", group), ("chunk_size", chunk),
                            ("capacity", as_capacity(self.capacity))):
            object.__setattr__(self, name, value)

    @staticmethod
    def check(grouping) -> Grouping:
        """``grouping`` itself when it is a :class:`Grouping`; otherwise one error line."""
        if not isinstance(grouping, Grouping):
            raise PageWeaverInputError(
                f"grouping must be a Grouping(window, group, capacity, chunk_size), got "
                f"{type(grouping).__name__} {grouping!r}")
        return grouping

    def with_window(self, window: int) -> Grouping:
        """The same grouping with another window W (validated like a new one)."""
        return dataclasses.replace(self, window=window)
