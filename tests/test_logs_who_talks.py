"""Who is talking: the judge and the monitor use the level and the speaker the anatomy reads.

Two cues, each on real lines posted in the public thread named beside them
(several are rows of the corpus's tune split), with counter-examples:

* a server made of a master and its workers (gunicorn) writes one log; the
  header's process id says who wrote a line. A worker's own end, or the master's
  report of it, is not the server's end; a worker the master replaced was
  survived (eagle3tui/logs/speaker.py, the monitor's held errors);
* in a task, an error-level record that names no source is the command's final
  report, fatal unless it goes on; a library's error (it names its source) or a
  daemon's notice (a service) is not (eagle3tui/logs/judge.py).
"""

from __future__ import annotations

from pathlib import Path

from eagle3tui.logs.anatomy import shape
from eagle3tui.logs.speaker import calls_part, named_pids, part_ending, speaker
from eagle3tui.logs.workers import split_worker
from tests.conftest import classified_events, corpus_tune_row, log_verdict


def who(line: str) -> str | None:
    """The speaker as the monitor reads it: prefixes peeled, the worker prefix passed apart."""
    _worker, rest = split_worker(line)
    return speaker(rest, line[: len(line) - len(rest)])


# -- reading the speaker -----------------------------------------------------------------

# https://github.com/benoitc/gunicorn/issues/3233 (journald's prefix, then gunicorn's header)
MASTER = ("Jul 05 09:13:44 webapps wsgi.sh[3129704]: [2024-07-05 09:13:44 +0200] [3129704] [CRITICAL] "
          "WORKER TIMEOUT (pid:3129714)")
WORKER_EXIT = ("Jul 05 09:13:44 webapps wsgi.sh[3129714]: [2024-07-05 09:13:44 +0200] [3129714] [INFO] "
               "Worker exiting (pid: 3129714)")
# https://github.com/benoitc/gunicorn/issues/1183 (a worker failed to boot; the master stops)
BOOT_WORKER_EXIT = "[2016-05-02 15:50:57 +0200] [58904] [INFO] Worker exiting (pid: 58904)"
MASTER_DOWN = "[2016-05-02 15:50:57 +0200] [58901] [INFO] Shutting down: Master"
# https://github.com/inventree/InvenTree/issues/4718 (gunicorn 20.1 reports a killed worker at WARNING)
TIMEOUT_221 = "[2023-04-28 20:15:30 +0000] [9] [CRITICAL] WORKER TIMEOUT (pid:221)"
KILLED_221 = "[2023-04-28 20:15:32 +0000] [9] [WARNING] Worker with pid 221 was terminated due to signal 9"


def test_the_speaker_is_the_pid_of_a_header_or_a_worker_prefix() -> None:
    assert who(MASTER) == "3129704"
    assert who(WORKER_EXIT) == "3129714"
    # gunicorn before 19 put no brackets round its date: benoitc/gunicorn#351
    assert who("2012-05-20 16:39:46 [23848] [INFO] Worker exiting (pid: 23848)") == "23848"
    # nginx: pid#tid (medic/medic-os#3, a tune row)
    assert who(corpus_tune_row("medic-os-3-1")["text"]) == "19985"
    # a vLLM worker prefix (vllm-project/vllm#27194, a tune row)
    assert who(corpus_tune_row("vllm-27194-1")["text"].split("\n")[0]) == "1"


def test_a_line_without_a_pid_in_its_header_has_no_known_speaker() -> None:
    # a pid in the message is whom the line is about, not who wrote it (haystack#363's
    # "Booting worker with pid: 26300" is written by 26300, but its header says so, not this)
    assert who("ERRO[0000] error loading config: nvidia-container-cli.ldconfig value") is None  # nvidia-container-toolkit#830
    assert who(corpus_tune_row("tensorflow-21638-1")["text"].split("\n")[0]) is None  # glog: a thread id, not a pid
    assert who("[2017-05-31 03:01:57 +0000] [1220] [DEBUG] Closing connection.") == "1220"  # gunicorn#1507


def test_the_processes_a_message_names() -> None:
    assert named_pids(shape(split_worker(MASTER)[1]).body) == {"3129714"}
    assert named_pids("[2020-09-09 17:35:00 +0200] [26300] [INFO] Booting worker with pid: 26300") == {"26300"}
    assert named_pids(KILLED_221) == {"221"}
    # counter-examples: no pid named ("rapid" is no pid; a header's pid is not in a message)
    assert named_pids("Shutting down: Master") == frozenset()
    assert named_pids("Closing connection.") == frozenset()
    # the master's own pid in brackets after its address: no "pid" names it (benoitc/gunicorn#351)
    assert named_pids("2012-05-20 16:39:46 [23845] [INFO] Listening at: http://127.0.0.1:8000 (23845)") == frozenset()


def test_a_line_calls_a_process_a_worker_by_its_pid() -> None:
    assert calls_part(WORKER_EXIT, "3129714")
    assert calls_part(KILLED_221, "221")
    assert not calls_part(WORKER_EXIT, "3129704")
    assert not calls_part(MASTER_DOWN, "58901")



def test_whose_ending_it_is() -> None:
    # the worker the master named ends: its own end, not the master's
    assert part_ending("3129704", frozenset({"3129714"}), WORKER_EXIT, "3129714")
    # a worker that calls itself one ends, after the master's own error
    assert part_ending("58901", frozenset(), BOOT_WORKER_EXIT, "58904")
    # the master reports the end of the worker its held error named
    assert part_ending("9", frozenset({"221"}), KILLED_221, "9")
    # counter-examples: the master's own end is the end, after its own error or a worker's
    assert not part_ending("58904", frozenset(), MASTER_DOWN, "58901")
    assert not part_ending("58901", frozenset(), MASTER_DOWN, "58901")
    # a worker ending after its own error: that error ended it
    assert not part_ending("58904", frozenset(), BOOT_WORKER_EXIT, "58904")
    # nothing known of the speakers: an ending is an ending
    assert not part_ending(None, frozenset(), MASTER_DOWN, "58901")
    assert not part_ending("58901", frozenset(), "Shutting down", None)
    # ... or of another worker, which it calls one
    assert part_ending("9", frozenset({"222"}), KILLED_221, "9")
    # but a part's end is the end for the error that the part itself wrote
    assert not part_ending("221", frozenset(), KILLED_221, "9")


# -- the monitor: a worker's end is not the server's ----------------------------------------

def _event(tmp_path: Path, text: str, kind: str, starts: str):
    return next(e for e in classified_events(tmp_path, text, kind) if e.text.startswith(starts) or starts in e.text)


def test_a_replaced_worker_is_survived_not_the_servers_end(tmp_path: Path) -> None:
    # gunicorn's master kills a worker that timed out (CRITICAL), the worker says it exits,
    # the master reports its exit code and boots another: the server survived.
    # https://github.com/benoitc/gunicorn/issues/3233 (tune row; labelled warning)
    row = corpus_tune_row("gunicorn-3233-1")
    kind, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert (kind, rules) == ("warning", {"service-survived"})
    ev = _event(tmp_path, row["text"], "service", "WORKER TIMEOUT")
    assert (ev.kind, ev.rule) == ("warning", "service-survived")


def test_a_timed_out_worker_replaced_at_once_is_reported_as_survived(tmp_path: Path) -> None:
    # https://github.com/deepset-ai/haystack/issues/363 (tune row). The thread's worker timed
    # out loading a model, over and over: a boot loop, which two lines cannot show (the tune
    # label is fatal). The line is reported now, as a worker the server replaced; before, the
    # master's CRITICAL was read as no level and the excerpt had no event at all.
    row = corpus_tune_row("haystack-363-1")
    ev = _event(tmp_path, row["text"], "service", "WORKER TIMEOUT")
    assert (ev.kind, ev.rule) == ("warning", "service-survived")


def test_the_masters_report_of_the_workers_it_killed_is_not_its_end(tmp_path: Path) -> None:
    # https://github.com/inventree/InvenTree/issues/4718: four workers time out, then the master
    # (gunicorn 20.1) reports each "terminated due to signal 9" at WARNING. The ending words are
    # the master's, about the workers its CRITICAL lines named.
    lines = [
        "[2023-04-28 20:15:30 +0000] [9] [CRITICAL] WORKER TIMEOUT (pid:221)",
        "[2023-04-28 20:15:30 +0000] [9] [CRITICAL] WORKER TIMEOUT (pid:222)",
        "[2023-04-28 20:15:30 +0000] [9] [CRITICAL] WORKER TIMEOUT (pid:223)",
        "[2023-04-28 20:15:30 +0000] [9] [CRITICAL] WORKER TIMEOUT (pid:224)",
        "[2023-04-28 20:15:32 +0000] [9] [WARNING] Worker with pid 223 was terminated due to signal 9",
        "[2023-04-28 20:15:32 +0000] [9] [WARNING] Worker with pid 222 was terminated due to signal 9",
        "[2023-04-28 20:15:32 +0000] [9] [WARNING] Worker with pid 224 was terminated due to signal 9",
        "[2023-04-28 20:15:32 +0000] [9] [WARNING] Worker with pid 221 was terminated due to signal 9",
    ]
    kind, _rules = log_verdict(tmp_path, "\n".join(lines), "service")
    assert kind == "warning"
    timeouts = [e for e in classified_events(tmp_path, "\n".join(lines), "service") if "WORKER TIMEOUT" in e.text]
    assert len(timeouts) == 4 and {e.kind for e in timeouts} == {"warning"}


def test_a_worker_killed_without_a_replacement_in_sight_stays_a_warning(tmp_path: Path) -> None:
    # https://github.com/BerriAI/litellm/issues/17529 (tune row; labelled warning)
    row = corpus_tune_row("litellm-17529-1")
    kind, _rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert kind == row["label"] == "warning"


def test_the_masters_own_end_after_a_workers_error_is_the_end(tmp_path: Path) -> None:
    # Counter-example: gunicorn#1183's tail after the master's own error-level report of the
    # worker (its "Worker (pid:N) exited with code 3" is how gunicorn says so; here the boot
    # error: the master stops). The worker's "Worker exiting" does not settle it; the master's
    # "Shutting down: Master" does. Lines: https://github.com/benoitc/gunicorn/issues/1183.
    lines = [
        "[2016-05-02 15:50:57 +0200] [58904] [INFO] Worker exiting (pid: 58904)",
        "[2016-05-02 15:50:57 +0200] [58901] [INFO] Shutting down: Master",
        "[2016-05-02 15:50:57 +0200] [58901] [INFO] Reason: Worker failed to boot.",
    ]
    # The speaker rule only keeps a held error over the worker's line; the master's line is
    # an ending for every held error (part_ending is False for it, whoever held it).
    assert not part_ending("58904", frozenset(), lines[1], who(lines[1]))
    assert not part_ending("58901", frozenset({"58904"}), lines[1], who(lines[1]))
    assert part_ending("58901", frozenset({"58904"}), lines[0], who(lines[0]))


# -- a task's final report ------------------------------------------------------------------

def test_a_commands_sourceless_error_record_in_a_task_is_its_final_report(tmp_path: Path) -> None:
    # https://github.com/NVIDIA/nvidia-container-toolkit/issues/830 (tune row; labelled fatal):
    # the runtime's main logs its error through logrus's bare logger, then the error's last
    # part, and exits 1.
    row = corpus_tune_row("nvidia-container-toolkit-830-1")
    assert row["kind"] == "task"
    kind, rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert (kind, rules) == ("fatal", {"top-level-error"})


def test_the_same_record_from_a_service_is_not_its_end(tmp_path: Path) -> None:
    # Counter-example: a daemon logs errors and goes on; the stage's kind says which one runs.
    row = corpus_tune_row("nvidia-container-toolkit-830-1")
    kind, _rules = log_verdict(tmp_path, row["text"], "service")
    assert kind != "fatal"


def test_a_daemons_error_level_notice_is_not_a_final_report(tmp_path: Path) -> None:
    # Counter-example: https://github.com/andikleen/mcelog/issues/20 (tune row, a service,
    # labelled benign): syslog's user.err priority, and the program's name as its source.
    row = corpus_tune_row("mcelog-20-1")
    kind, _rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert kind != "fatal"
    assert shape(row["text"].split("\n")[0]).source == "mcelog"


def test_a_librarys_error_that_ends_an_excerpt_is_not_a_final_report(tmp_path: Path) -> None:
    # Counter-example: an excerpt that ends on an error line is no evidence of death.
    # https://github.com/tensorflow/tensorflow/issues/21638 (tune row, a task, labelled warning):
    # the allocator's error names its source file, then a warning follows.
    row = corpus_tune_row("tensorflow-21638-1")
    first = row["text"].split("\n")[0]
    kind, _rules = log_verdict(tmp_path, first, "task")
    assert kind != "fatal"
    kind, _rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert kind == row["label"] == "warning"


def test_a_sourceless_error_that_heads_a_list_is_not_the_last_word(tmp_path: Path) -> None:
    # Counter-example: pip's resolver report announces the list after it.
    # https://github.com/johschmitz/blender-driving-scenario-creator/issues/28 (tune row, benign)
    row = corpus_tune_row("blender-driving-scenario-creator-28-1")
    kind, _rules = log_verdict(tmp_path, row["text"], row["kind"])
    assert kind == row["label"] == "benign"


def test_a_json_record_cut_short_is_not_a_final_report(tmp_path: Path) -> None:
    # Counter-example: a controller's error record cut in the thread; its logger key is there
    # but the record could not be decoded, so its source is unknown, not absent.
    # https://github.com/sky-big/pulsar-operator/issues/14
    line = ('{"level":"error","ts":1592892020.1254334,"logger":"controller_pulsarcluster","msg":"Reconciling '
            'PulsarCluster Zookeeper Error","Request.Namespace":"myco-test"')
    assert shape(line).level == "error"
    kind, _rules = log_verdict(tmp_path, line, "task")
    assert kind != "fatal"


def test_a_decoded_json_record_without_a_logger_in_a_task_is_a_final_report(tmp_path: Path) -> None:
    # The same cue for a JSON line decoded whole: pino's numeric level 50, no logger
    # (https://github.com/salman0ansari/whatsapp-api-nodejs/issues/85). As a service (what that
    # program is) it is one error among others; as a task's last words, its final report.
    line = ('{"level":50,"time":1651261889317,"pid":69444,"hostname":"Am.local","error":{"tag":"stream:error","attrs":'
            '{"code":"401"},"content":[{"tag":"conflict","attrs":{"type":"device_removed"},"content":null}]},'
            '"msg":"stream errored out"}')
    assert (shape(line).level, shape(line).source) == ("error", "")
    assert log_verdict(tmp_path, line, "task")[0] == "fatal"
    assert log_verdict(tmp_path, line, "service")[0] != "fatal"
