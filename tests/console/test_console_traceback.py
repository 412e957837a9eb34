"""The console's letter view shows where the job failed: the group's failing frame and each sample's traceback."""

from __future__ import annotations

import html

import requests

from tests.cli.test_dlq_traceback import _letter, _line, _raised_in, release, reserve


def test_the_dlq_page_shows_the_failing_frame_and_the_traceback(deployment, serve):
    _letter(deployment, "o-1", _raised_in(reserve))
    _letter(deployment, "o-2", _raised_in(release))
    console = serve()

    page = html.unescape(requests.get(console.url + "dlq?tier=critical", timeout=30).text)

    reserve_line, release_line = _line(reserve, "return payload"), _line(release, "return -payload")
    assert f"failed at <code>tests/cli/test_dlq_traceback.py:{reserve_line} in reserve</code>" in page
    assert f"failed at <code>tests/cli/test_dlq_traceback.py:{release_line} in release</code>" in page
    tracebacks = page.split('<pre class="traceback">')[1:]
    assert len(tracebacks) == 2
    assert any(f'test_dlq_traceback.py", line {reserve_line}, in reserve' in block for block in tracebacks)
    assert all(block.split("</pre>")[0].rstrip().endswith("KeyError: 'qty'") for block in tracebacks)
