"""Arrow-native pieces of ``read_scores``: label codes from dictionary encoding and the sort of the key.

Every function works on whole Arrow or NumPy arrays (no per-row Python) and returns ``None`` when its fast
route does not apply (nulls, an unexpected type, a value it cannot parse); ``read_scores`` then takes the
pandas route, which words every error. pyarrow is imported inside the functions so ``import cjstats`` stays light.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cjstats.io.rules import INT_TEXT  # a plain integer label (``12``, not ``007``), the rule of read_scores


def is_text_type(t: Any) -> bool:
    """Whether an Arrow type is ``string`` or ``large_string``."""
    import pyarrow as pa

    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _dictionary(col: Any) -> tuple[np.ndarray, Any, bool] | None:
    """(indices as a NumPy array, one dictionary, whether every entry is used) of a text column without nulls,
    dictionary-encoded or not (a dictionary that comes with the column may hold entries no row uses)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(col, pa.Array):
        col = pa.chunked_array([col])
    t = col.type
    if pa.types.is_dictionary(t):
        if not is_text_type(t.value_type):
            return None
        enc, all_used = col, False
    elif is_text_type(t):  # one chunk, one dictionary (chunks encoded apart would need unifying)
        enc, all_used = pa.chunked_array([pc.dictionary_encode(col.combine_chunks())]), True
    else:
        return None
    if col.null_count or enc.num_chunks == 0:
        return None
    if enc.num_chunks > 1:
        enc = enc.unify_dictionaries()
        indices = np.concatenate([c.indices.to_numpy() for c in enc.chunks])
    else:
        indices = enc.chunk(0).indices.to_numpy()
    return indices, enc.chunk(0).dictionary, all_used


def text_codes(col: Any, *, as_int: bool = False) -> tuple[np.ndarray, Any, bool, bool] | None:
    """Codes of a text column into its sorted distinct labels, by dictionary encoding.

    Returns ``(codes, labels, is_int, all_used)``: ``codes`` (int32, one per row) index ``labels``, the
    distinct values, sorted. Text sorts by code point (the order ``sorted`` gives for ``str``), and ``labels``
    is an Arrow string array. A column that comes dictionary-encoded (Parquet) keeps its dictionary, which may
    hold labels no row uses (``all_used`` False; codes and sort are right either way, and finding them costs a
    pass over the rows). With ``as_int``, a column whose every distinct label is a plain integer
    (:data:`INT_TEXT`) is coded by numeric order instead and ``labels`` is then an int64 NumPy array
    (``is_int`` True; the dictionary is then checked for unused labels). ``None`` when the column is not text
    or holds nulls.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    got = _dictionary(col)
    if got is None:
        return None
    indices, dictionary, all_used = got
    if not all_used and as_int:
        used = np.bincount(indices, minlength=len(dictionary)) > 0
        if not used.all():  # entries no row uses (a dictionary shared with other rows): leave them out
            remap = (np.cumsum(used) - 1).astype(np.int32)
            indices, dictionary = remap[indices], dictionary.filter(pa.array(used))
        all_used = True
    is_int, numbers = False, None
    if as_int and pc.all(pc.match_substring_regex(dictionary, f"^{INT_TEXT}$")).as_py() is not False:
        try:
            numbers = pc.cast(dictionary, pa.int64()).to_numpy()
        except pa.ArrowException:  # beyond int64 the integers would not be lossless: they stay text
            numbers = None
    if numbers is not None:
        order = np.argsort(numbers, kind="stable")
        labels: Any = numbers[order]
        if (labels[1:] == labels[:-1]).any():  # '-0' and '0' are one integer: the pandas route merges them
            return None
        is_int = True
    else:
        order = pc.array_sort_indices(dictionary).to_numpy()
        labels = dictionary.take(pa.array(order))
    if (order == np.arange(len(order))).all():  # labels already in order: the indices are the codes
        return indices.astype(np.int32, copy=False), labels, is_int, all_used
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return rank[indices], labels, is_int, all_used


def int_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(codes, sorted distinct values) of an integer array in a modest range, by a lookup table; else ``None``.

    When the values are exactly ``0 .. n-1`` (every one present) they are their own codes (no copy).
    """
    if values.dtype.kind not in "iu" or (values.dtype.kind == "u" and values.dtype.itemsize >= 8) or not len(values):
        return None
    lo, hi = int(values.min()), int(values.max())
    if hi - lo > 4 * len(values) + 1024 or hi - lo >= 2**31:
        return None
    shifted = values.astype(np.int64, copy=False) - lo if lo else values
    seen = np.zeros(hi - lo + 1, dtype=bool)
    seen[shifted] = True
    uniques = (np.flatnonzero(seen) + lo).astype(values.dtype)
    if seen.all():
        return shifted, uniques
    rank = np.cumsum(seen, dtype=np.int32) - 1
    return rank[shifted], uniques


def sort_key(codes: list[np.ndarray], sizes: list[int]) -> tuple[np.ndarray | None, np.ndarray, bool] | None:
    """The stable row order by several code columns, the combined key in that order, and whether a key repeats.

    The key is ``((c0 * n1 + c1) * n2 + c2) ...`` (``n`` = number of labels of each column), so equal keys are
    equal cells. Returns ``(order, sorted_key, has_duplicates)`` with ``order`` None when the rows are
    already sorted; ``None`` when the key would not fit in an int64. Rows in long sorted runs are ordered by
    NumPy's stable sort (a merge of the runs); rows in little order, with keys in a dense range, by counting:
    ``order[rank[key[i]]] = i`` with ``rank`` the cumulative key counts (stable, as keys that repeat stop it).
    When a key repeats, ``order`` and ``sorted_key`` may be ``None`` (the caller does not use them then).
    """
    total = 1
    for n in sizes:
        total *= max(n, 1)
    if total >= 2**62:
        return None
    # a copy, so the steps below can work in place; int32 when the key fits (half the memory traffic)
    key = codes[0].astype(np.int32 if total < 2**31 else np.int64)
    for c, n in zip(codes[1:], sizes[1:]):
        key *= max(n, 1)
        key += c
    n = len(key)
    descents = int(np.count_nonzero(key[1:] < key[:-1]))
    if descents == 0:
        return None, key, bool((key[1:] == key[:-1]).any())
    if descents > n // 64 and total <= 4 * n + 1024:
        counts = np.bincount(key, minlength=total)
        if counts.max() > 1:
            return None, None, True
        rank = np.cumsum(counts) - 1
        order = np.empty(n, dtype=np.intp)
        order[rank[key]] = np.arange(n, dtype=np.intp)
        return order, np.flatnonzero(counts).astype(key.dtype), False
    order = np.argsort(key, kind="stable")
    key = key[order]
    return order, key, bool((key[1:] == key[:-1]).any())
