"""How ``AsyncVectorEnv`` shares the envs' observations between processes.

Gymnasium gives ``Sequence`` spaces no shared memory and reads ``Text`` shared memory once
(every later text reads as the first), so the observation space of every env is an
:class:`ObservationDict`, whose shared-memory form is one slot per env holding the pickled
observation. ``gym.make_vec(id, n, vectorization_mode="async")`` then needs no arguments,
and its batches equal ``SyncVectorEnv``'s. The functions are registered with Gymnasium's
``create_shared_memory``, ``read_from_shared_memory`` and ``write_to_shared_memory``.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import (
    concatenate,
    create_empty_array,
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

#: Items a ``Sequence`` observation may hold in shared memory (more raise at ``step``).
SEQUENCE_ITEMS = 256
#: Pickle overhead allowed per value (a small NumPy array pickles to about 150 bytes).
_OVERHEAD = 256


class ObservationDict(spaces.Dict):
    """A :class:`~gymnasium.spaces.Dict` observation space that ``AsyncVectorEnv`` can share.

    It is a ``Dict`` in every other respect: it samples, checks, pickles, flattens and
    batches as one.
    """


def slot_bytes(space: spaces.Space[Any]) -> int:
    """Bytes that bound the pickle of one value of ``space``.

    A ``Sequence`` is bounded at :data:`SEQUENCE_ITEMS` items and a ``Text`` character at
    4 bytes (UTF-8).

    Raises:
        CustomSpaceError: For spaces with no bound (``Graph``, ``OneOf``, custom spaces);
            ``AsyncVectorEnv`` then says to pass ``shared_memory=False``.
    """
    if isinstance(space, spaces.Dict):
        return _OVERHEAD + sum(len(k) + slot_bytes(s) for k, s in space.spaces.items())
    if isinstance(space, spaces.Tuple):
        return _OVERHEAD + sum(slot_bytes(s) for s in space.spaces)
    if isinstance(space, spaces.Sequence):
        return _OVERHEAD + SEQUENCE_ITEMS * slot_bytes(space.feature_space)
    if isinstance(space, spaces.Text):
        return _OVERHEAD + 4 * space.max_length
    if isinstance(space, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
        return _OVERHEAD + int(np.prod(space.shape or ())) * np.dtype(space.dtype).itemsize
    raise CustomSpaceError(f"no shared-memory bound for {type(space).__name__} spaces")


class SharedObservations(Mapping[str, Any]):
    """The batch of observations in shared memory, decoded when read.

    ``AsyncVectorEnv`` reads shared memory once and returns this object after every step:
    a deep copy (its default, ``copy=True``) is the plain dict ``SyncVectorEnv`` returns;
    with ``copy=False`` it is this live view, which later steps update.
    """

    def __init__(self, space: ObservationDict, memory: tuple[Any, Any], n: int) -> None:
        self._space, self._n = space, n
        self._header, self._data = _arrays(memory, n)
        self._stamps: tuple[int, ...] | None = None
        self._batch: dict[str, Any] = {}

    def batch(self) -> dict[str, Any]:
        """The observations of the ``n`` envs, batched as ``SyncVectorEnv`` batches them."""
        stamps = tuple(int(s) for s in self._header[:, 1])
        if stamps != self._stamps:
            empty = cast(dict[str, Any], create_empty_array(self._space, n=self._n))
            if 0 in stamps:  # some env has written nothing yet
                self._batch = empty
            else:
                slot = len(self._data) // self._n  # pickles our own workers wrote
                values = [
                    pickle.loads(self._data[i * slot : i * slot + length].tobytes())
                    for i, length in enumerate(self._header[:, 0])
                ]
                self._batch = cast(dict[str, Any], concatenate(self._space, values, empty))
            self._stamps = stamps
        return self._batch

    def __getitem__(self, key: str) -> Any:
        return self.batch()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._space.spaces)

    def __len__(self) -> int:
        return len(self._space.spaces)

    def __reduce__(self) -> tuple[type[dict[str, Any]], tuple[dict[str, Any]]]:
        """Copies and pickles are plain dicts (so ``copy=True`` batches are)."""
        return dict, (self.batch(),)

    def __repr__(self) -> str:
        return repr(self.batch())


def _arrays(memory: tuple[Any, Any], n: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """The header (``[length, writes]`` per env) and data of a shared memory, as arrays."""
    header, data = memory
    return np.frombuffer(header, np.int64).reshape(n, 2), np.frombuffer(data, np.uint8)


@create_shared_memory.register(ObservationDict)
def _create(space: ObservationDict, n: int = 1, ctx: ModuleType = mp) -> tuple[Any, Any]:
    return ctx.RawArray("q", 2 * n), ctx.RawArray("B", n * slot_bytes(space))


@read_from_shared_memory.register(ObservationDict)
def _read(space: ObservationDict, shared_memory: tuple[Any, Any], n: int = 1) -> Any:
    return SharedObservations(space, shared_memory, n)


@write_to_shared_memory.register(ObservationDict)
def _write(
    space: ObservationDict, index: int, value: dict[str, Any], shared_memory: tuple[Any, Any]
) -> None:
    n = len(shared_memory[0]) // 2
    header, data = _arrays(shared_memory, n)
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    slot = len(data) // n
    if len(payload) > slot:
        raise ValueError(
            f"an observation of {len(payload)} bytes exceeds its {slot}-byte shared-memory slot "
            f"(a Sequence over {SEQUENCE_ITEMS} items?); make the vector env with "
            "vector_kwargs={'shared_memory': False}"
        )
    data[index * slot : index * slot + len(payload)] = np.frombuffer(payload, np.uint8)
    header[index] = (len(payload), header[index, 1] + 1)
