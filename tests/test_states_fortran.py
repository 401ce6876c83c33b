"""A states file written from a Fortran-ordered array (a transpose, MATLAB's or Julia's exports): numpy stores its
values column by column and says so in the header, and rnnviz.interpret.states must read back the array itself."""

import io

import numpy as np
import pytest

from rnnviz.interpret.states import read_states

T, H, LAYERS = 30, 5, 2


def saved(fmt: str, array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    if fmt == "npy":
        np.save(buffer, array)
    else:
        np.savez(buffer, h=array)
    return buffer.getvalue()


def fortran_ordered(*shape: int) -> np.ndarray:
    """Distinct float32 values in column-major memory, as a transposed (H, T) array is: C order would scramble them."""
    values = np.asfortranarray(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 7)
    assert values.flags.f_contiguous and not values.flags.c_contiguous
    return values


@pytest.mark.parametrize("fmt", ["npy", "npz"])
def test_a_fortran_ordered_t_h_array_reads_back_as_itself(fmt):
    states = fortran_ordered(T, H)
    data = saved(fmt, states)
    assert b"'fortran_order': True" in data  # the header numpy wrote says column-major
    read = read_states(data, f"h.{fmt}", T)
    assert read.names == ("h",)
    np.testing.assert_array_equal(read.datasets["h"], states[None])  # (1, T, H): one layer


@pytest.mark.parametrize("fmt", ["npy", "npz"])
def test_a_fortran_ordered_layers_t_h_array_reads_back_as_itself(fmt):
    states = fortran_ordered(LAYERS, T, H)
    read = read_states(saved(fmt, states), f"h.{fmt}", T)
    np.testing.assert_array_equal(read.datasets["h"], states)
    np.testing.assert_array_equal(read.trace().block(1, "h"), states[1])  # layer 1's (T, H) as the pages read it
