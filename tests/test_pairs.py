"""The captioning and seq2seq command lines and checkpoint readers share rnnviz.pairs: the same bad input gets the
same kind of answer from both, one line of words and exit code 2."""

import pytest

from rnnviz.captioning.__main__ import main as captioning_main
from rnnviz.captioning.checkpoint import CaptionerError, load_captioner
from rnnviz.seq2seq.__main__ import main as seq2seq_main


@pytest.mark.parametrize("cli", [captioning_main, seq2seq_main], ids=["captioning", "seq2seq"])
def test_an_unknown_option_is_one_line_and_exit_code_2(cli, capsys):
    assert cli(["train", "--no-such-option"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("train: unrecognized arguments: --no-such-option\n"), err


def test_a_captioner_path_that_is_a_folder_or_missing_is_refused_in_words(tmp_path, capsys):
    for path in (tmp_path, tmp_path / "missing.pt"):
        with pytest.raises(CaptionerError, match="No such captioner file"):
            load_captioner(path)
    assert captioning_main(["chair", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No such captioner file" in err, err
