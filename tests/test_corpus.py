"""Corpora: vocabulary, user-text checks, built-ins, the verified download (over loopback only), TBPTT batches."""

import hashlib
import http.server
import socket
import threading
import time
from pathlib import Path

import pytest
import torch

from rnnviz.charlm.corpus import (
    TINY_SHAKESPEARE_BYTES,
    TINY_SHAKESPEARE_FILE,
    TINY_SHAKESPEARE_SHA256,
    Corpus,
    CorpusError,
    TBPTTBatcher,
    UnknownCharactersError,
    Vocab,
    corpus_from_user_text,
    load_builtin,
    needs_download,
    python_stdlib_text,
    tiny_shakespeare_path,
)

SHAKESPEARE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tinyshakespeare.txt"

PROSE = "The quick brown fox jumps over the lazy dog. " * 5


# --- Vocab ------------------------------------------------------------------------------------------------


def test_vocab_round_trip_and_sorted_ids():
    vocab = Vocab.from_text("hello")
    assert vocab.chars == "ehlo"
    ids = vocab.encode("hello")
    assert ids.tolist() == [1, 0, 2, 2, 3]
    assert ids.dtype == torch.long
    assert vocab.decode(ids) == "hello"


def test_vocab_handles_characters_outside_the_bmp():
    text = "ab🙂c🙂é"
    vocab = Vocab.from_text(text)
    assert vocab.decode(vocab.encode(text)) == text


def test_unknown_prime_characters_are_named():
    vocab = Vocab.from_text("hello")
    with pytest.raises(UnknownCharactersError, match="'x'") as err:
        vocab.encode("hex€")
    assert err.value.chars == ["x", "€"]


# --- User text --------------------------------------------------------------------------------------------


def test_user_text_from_bytes_and_str():
    corpus = corpus_from_user_text(PROSE.encode())
    assert corpus.text == PROSE
    assert corpus.vocab.size == len(set(PROSE))
    assert corpus_from_user_text("a\r\nb" * 60).text == "a\nb" * 60


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(200), "binary"),
        ("abc\x01\x02\x03\x04" * 30, "control"),
        ("caf\u00e9 au lait, s'il vous pla\u00eet. ".encode("latin-1") * 10, "not UTF-8"),
        ("too short", "at least 100"),
        ("a" * 500, "single distinct"),
        ("".join(chr(0x4E00 + i) for i in range(1200)), "limit is 1,000"),
    ],
)
def test_bad_user_text_gives_a_clear_error(data, message):
    with pytest.raises(CorpusError, match=message):
        corpus_from_user_text(data)


def test_user_text_size_cap():
    with pytest.raises(CorpusError, match="limit is 1,000"):
        corpus_from_user_text(PROSE * 10, max_bytes=1000)


def test_emoji_rich_text_is_accepted():
    corpus = corpus_from_user_text("I love 🙂 and 🎉 and 🐍! " * 20)
    assert "🐍" in corpus.vocab.chars


# --- Built-ins ----------------------------------------------------------------------------------------------


def test_hello_is_the_lecture_toy():
    corpus = load_builtin("hello")
    assert corpus.text == "hello"
    assert corpus.vocab.chars == "ehlo"
    train, val = corpus.split()
    assert train.tolist() == val.tolist() == corpus.ids.tolist()  # too small to hold anything out


def test_english_docs_is_pydoc_prose():
    corpus = load_builtin("english-docs")
    assert 300_000 < len(corpus) < 1_000_000
    assert "assert" in corpus.text


def test_python_stdlib_is_capped_sorted_real_code():
    text = python_stdlib_text(max_chars=50_000)
    assert 45_000 < len(text) <= 50_000
    assert text.endswith("\n")
    headers = [line[2:] for line in text.splitlines() if line.startswith("# ") and line.endswith(".py")]
    assert len(headers) > 3
    assert headers == sorted(headers, key=lambda h: h.split("/"))
    assert "def " in text and "import " in text


def test_unknown_builtin_is_a_clear_error():
    with pytest.raises(CorpusError, match="Unknown corpus"):
        load_builtin("war-and-peace")


def test_split_is_90_10_with_val_last():
    corpus = Corpus("t", PROSE * 4)
    train, val = corpus.split()
    assert len(train) == int(len(corpus) * 0.9)
    assert torch.equal(torch.cat([train, val]), corpus.ids)


# --- Tiny Shakespeare download over loopback ------------------------------------------------------------------


class _Server:
    """A loopback HTTP server whose response body and behaviour the test sets."""

    def __init__(self):
        self.body = b""
        self.declared_length: int | None = None
        self.delay = 0.0
        self.requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests += 1
                time.sleep(outer.delay)
                length = outer.declared_length if outer.declared_length is not None else len(outer.body)
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", str(length))
                    self.end_headers()
                    self.wfile.write(outer.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (the timeout test)
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/input.txt"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def shakespeare_bytes():
    if not SHAKESPEARE.exists():
        pytest.skip(f"{SHAKESPEARE} is absent")
    return SHAKESPEARE.read_bytes()


@pytest.fixture
def server():
    srv = _Server()
    yield srv
    srv.close()


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def test_good_download_is_verified_cached_and_reused(server, shakespeare_bytes, tmp_path):
    server.body = shakespeare_bytes
    seen = []
    path = tiny_shakespeare_path(cache=tmp_path, url=server.url, progress=lambda done, total: seen.append(done))
    assert path == tmp_path / TINY_SHAKESPEARE_FILE
    assert hashlib.sha256(path.read_bytes()).hexdigest() == TINY_SHAKESPEARE_SHA256
    assert seen[-1] == TINY_SHAKESPEARE_BYTES and seen == sorted(seen)
    assert _leftovers(tmp_path) == [TINY_SHAKESPEARE_FILE]
    tiny_shakespeare_path(cache=tmp_path, url=server.url)
    assert server.requests == 1  # served from the cache the second time


def test_builtin_reads_the_cache_from_the_environment(server, shakespeare_bytes, tmp_path, monkeypatch):
    server.body = shakespeare_bytes
    monkeypatch.setenv("RNNVIZ_CACHE", str(tmp_path))
    monkeypatch.setenv("RNNVIZ_TINY_SHAKESPEARE_URL", server.url)
    corpus = load_builtin("tiny-shakespeare")
    assert len(corpus) == TINY_SHAKESPEARE_BYTES and corpus.vocab.size == 65
    assert corpus.text.startswith("First Citizen:")


def test_damaged_cache_file_is_replaced(server, shakespeare_bytes, tmp_path):
    server.body = shakespeare_bytes
    (tmp_path / TINY_SHAKESPEARE_FILE).write_bytes(shakespeare_bytes[:1000])
    path = tiny_shakespeare_path(cache=tmp_path, url=server.url)
    assert path.stat().st_size == TINY_SHAKESPEARE_BYTES


def test_wrong_hash_leaves_nothing(server, shakespeare_bytes, tmp_path):
    server.body = shakespeare_bytes[:-1] + b"!"  # right size, wrong content
    with pytest.raises(CorpusError, match="sha256"):
        tiny_shakespeare_path(cache=tmp_path, url=server.url)
    assert _leftovers(tmp_path) == []


def test_truncated_body_leaves_nothing(server, shakespeare_bytes, tmp_path):
    server.body = shakespeare_bytes[:300_000]
    server.declared_length = len(shakespeare_bytes)  # the connection closes early
    with pytest.raises(CorpusError, match="Tiny Shakespeare"):
        tiny_shakespeare_path(cache=tmp_path, url=server.url)
    assert _leftovers(tmp_path) == []


def test_refused_connection_suggests_the_builtins(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(CorpusError, match="built-in corpus"):
        tiny_shakespeare_path(cache=tmp_path, url=f"http://127.0.0.1:{port}/input.txt")
    assert _leftovers(tmp_path) == []


def test_stalled_server_times_out(server, tmp_path):
    server.delay = 2.0
    start = time.perf_counter()
    with pytest.raises(CorpusError, match="Could not download"):
        tiny_shakespeare_path(cache=tmp_path, url=server.url, timeout=0.3)
    assert time.perf_counter() - start < 1.9
    assert _leftovers(tmp_path) == []


def test_only_tiny_shakespeare_without_a_good_copy_needs_a_download(shakespeare_bytes, tmp_path):
    others = ("python-stdlib", "english-docs", "hello", "an uploaded file.txt")
    # One folder per case: a file rewritten within one clock tick keeps its mtime, which keys the sha256 check.
    empty, damaged, good = (tmp_path / name for name in ("empty", "damaged", "good"))
    assert needs_download("tiny-shakespeare", cache=empty)
    assert not any(needs_download(name, cache=empty) for name in others)
    damaged.mkdir()
    (damaged / TINY_SHAKESPEARE_FILE).write_bytes(shakespeare_bytes[:-1] + b"!")  # right size, wrong sha256
    assert needs_download("tiny-shakespeare", cache=damaged)  # a damaged copy is downloaded again
    good.mkdir()
    (good / TINY_SHAKESPEARE_FILE).write_bytes(shakespeare_bytes)
    assert not needs_download("tiny-shakespeare", cache=good)
    assert not any(needs_download(name, cache=good) for name in others)


def test_needs_download_reads_the_cache_from_the_environment(shakespeare_bytes, tmp_path, monkeypatch):
    monkeypatch.setenv("RNNVIZ_CACHE", str(tmp_path))
    assert needs_download("tiny-shakespeare")
    (tmp_path / TINY_SHAKESPEARE_FILE).write_bytes(shakespeare_bytes)
    assert not needs_download("tiny-shakespeare")


# --- TBPTT batches -------------------------------------------------------------------------------------------


def test_chunks_continue_each_stream_and_targets_shift_by_one():
    ids = torch.arange(101)
    batcher = TBPTTBatcher(ids, batch=4, seq_len=5)  # S = 25, 5 chunks per epoch
    assert batcher.chunks_per_epoch == 5
    x0, y0, first = batcher.next_batch()
    x1, y1, second = batcher.next_batch()
    assert first and not second
    assert x0[:, 0].tolist() == [0, 25, 50, 75]
    assert torch.equal(y0, x0 + 1)
    assert torch.equal(x1[:, 0], x0[:, -1] + 1)  # chunk 1 continues chunk 0 in every stream
    for _ in range(3):
        batcher.next_batch()
    x5, _, wrapped = batcher.next_batch()
    assert wrapped and torch.equal(x5, x0)


def test_short_text_shrinks_batch_then_t():
    ids = Corpus("hello", "hello").ids
    batcher = TBPTTBatcher(ids, batch=32, seq_len=64)
    assert (batcher.batch, batcher.seq_len) == (1, 4)
    x, y, _ = batcher.next_batch()
    vocab = Vocab.from_text("hello")
    assert vocab.decode(x[0]) == "hell" and vocab.decode(y[0]) == "ello"
