"""The cap on malloc arenas: applied on glibc, left to the operator's MALLOC_ARENA_MAX."""

from __future__ import annotations

import platform

import pytest

from upwatch.kit.allocator import limit_arenas

pytestmark = pytest.mark.db_independent


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_arenas_are_capped_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_arenas(8) is True


def test_an_arena_count_the_operator_set_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_arenas(2) is False
