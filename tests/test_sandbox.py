"""The bubblewrap sandbox: real bwrap, real overlayfs, real limits; isolation proved from inside."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from openclaw_rl.agentic.sandbox import (Sandbox, SandboxError, SandboxLimits, sandbox_available)

_OK, _WHY = sandbox_available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"no sandbox here: {_WHY}")


@pytest.fixture
def box():
    with Sandbox() as sandbox:
        yield sandbox


def _drained(box: Sandbox) -> bool:
    """Whether the episode's pids cgroup empties (the kernel reaps a dead pid namespace async)."""
    deadline = time.monotonic() + 10
    while box.cgroup.pids():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _py(code: str) -> str:
    """A ``python3 -c`` command line for ``code`` (single quotes inside are not allowed)."""
    assert "'" not in code
    return f"python3 -c '{code}'"


def test_commands_run_as_root_in_a_fresh_workspace(box):
    r = box.run("pwd; id -u; ls -A /workspace /tmp /root | wc -l; echo $HOME")
    assert r.returncode == 0 and not r.timed_out
    assert r.output.split() == ["/workspace", "0", "2", "/root"] or r.output.split()[:2] == ["/workspace", "0"]
    assert box.run("exit 3").returncode == 3


def test_no_network_neither_host_loopback_nor_outside(box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        inside = box.run(_py(f"import socket; s = socket.socket(); s.settimeout(3); s.connect((\"127.0.0.1\", {port}))"))
        assert inside.returncode != 0 and "ConnectionRefusedError" in inside.output, inside
        outside = box.run(_py("import socket; s = socket.socket(); s.settimeout(3); s.connect((\"1.1.1.1\", 80))"))
        assert outside.returncode != 0 and ("unreachable" in outside.output.lower()), outside
        dns = box.run(_py("import socket; socket.getaddrinfo(\"pypi.org\", 443)"))
        assert dns.returncode != 0
        # the host listener never saw a connection
        server.settimeout(0.2)
        with pytest.raises(socket.timeout):
            server.accept()
        links = box.run("cat /proc/net/dev | tail -n +3 | cut -d: -f1")
        assert links.output.split() == ["lo"]
    finally:
        server.close()


def test_writes_land_in_the_episode_not_on_the_host(box, tmp_path):
    before = Path("/etc/os-release").read_bytes()
    r = box.run("echo pwned >> /etc/os-release && tail -1 /etc/os-release && echo x > /usr/bin/oc-planted")
    assert r.returncode == 0 and r.output.startswith("pwned")
    assert Path("/etc/os-release").read_bytes() == before
    assert not Path("/usr/bin/oc-planted").exists()
    host_file = tmp_path / "host.txt"
    host_file.write_text("host")
    r = box.run(f"mkdir -p {tmp_path} && echo evil > {host_file} && cat {host_file}")
    assert r.returncode == 0 and r.output.strip() == "evil"
    assert host_file.read_text() == "host"
    # the change stays for the rest of the episode
    assert box.run("cat /usr/bin/oc-planted").output.strip() == "x"


def test_project_checkout_and_other_episodes_are_invisible(tmp_path):
    here = Path(__file__).resolve()
    with Sandbox(files={"/workspace/secret.txt": "episode-A"}) as a, Sandbox() as b:
        assert a.run("cat /workspace/secret.txt").output == "episode-A"
        for path in (str(here), str(here.parent), "/work", str(a.root), str(b.root), "/workspace/secret.txt"):
            r = b.run(f"ls -d {path}")
            assert r.returncode != 0 and "No such file" in r.output, (path, r)
        assert "secret" not in b.run("grep -rl episode-A /tmp /root /workspace /home; true").output
        # processes of one episode are not visible in the other (own pid namespace)
        shell = a.shell()
        shell.send("sleep 777 &")
        assert "sleep 777" in shell.send("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
        assert "sleep 777" not in b.run("cat /proc/[0-9]*/cmdline | tr '\\0' ' '").output


def test_no_dangerous_privileges(box):
    for cmd in ("mount -t tmpfs none /mnt", "mknod /tmp/disk b 254 0",
                "nsenter -t 1 -m true", "modprobe dummy", "chattr +i /workspace"):
        r = box.run(cmd)
        assert r.returncode != 0, (cmd, r)
    # host-wide kernel knobs cannot even be opened for writing (nothing is written either way)
    for path in ("/proc/sys/vm/swappiness", "/proc/sysrq-trigger", "/proc/sys/kernel/hostname"):
        r = box.run(_py(f"open(\"{path}\", \"w\")"))
        assert r.returncode != 0, (path, r)
        assert "Read-only file system" in r.output or (
            "No such file" in r.output and not os.path.exists(path)), (path, r)
    assert box.run("hostname").output.strip() == "sandbox"


def test_fork_bomb_is_capped_and_everything_recovers():
    limits = SandboxLimits(max_processes=32, wall_seconds=4)
    with Sandbox(limits=limits) as box:
        t0 = time.monotonic()
        r = box.run(":(){ :|:& };:; sleep 30")
        assert time.monotonic() - t0 < 60
        assert r.timed_out and r.returncode == 124
        if box.cgroup is not None:
            # the cap: a counting forker never gets past it
            # (children wait for the parent's pipe to close, so they end with it)
            count = box.run(_py("import os\nr, w = os.pipe()\nn = 0\ntry:\n    while True:\n"
                                "        if os.fork() == 0:\n            os.close(w); os.read(r, 1); os._exit(0)\n"
                                "        n += 1\nexcept OSError:\n    print(n)"), timeout=10)
            assert count.returncode == 0, count
            assert int(count.output.split()[-1]) < limits.max_processes
            assert _drained(box)  # everything the command started is gone
        assert box.run("echo alive").output == "alive\n"
    assert os.system("true") == 0  # the host can still fork


def test_memory_hog_is_stopped():
    with Sandbox(limits=SandboxLimits(memory_mb=256)) as box:
        r = box.run(_py("x = []\nwhile True:\n    x.append(bytearray(10 ** 7))"))
        assert r.returncode != 0 and "MemoryError" in r.output, r
        r = box.run("head -c 1G /dev/zero | tail > /dev/null")
        assert r.returncode != 0
        assert box.run("echo alive").output == "alive\n"


def test_cpu_time_and_file_size_limits():
    with Sandbox(limits=SandboxLimits(cpu_seconds=1, file_size_mb=1, wall_seconds=30)) as box:
        r = box.run("while :; do :; done")
        assert not r.timed_out and r.returncode in (128 + 9, 128 + 24), r  # SIGKILL / SIGXCPU
        r = box.run("head -c 5M /dev/zero > /tmp/big; ls -l /tmp/big")
        assert r.returncode != 0 or "1048576" in r.output
        assert len(box.read_file("/tmp/big")) <= 1024 * 1024


def test_never_ending_command_times_out_with_its_whole_tree(box):
    t0 = time.monotonic()
    r = box.run("(setsid sleep 1000 &); (sleep 1000 &); sleep 1000", timeout=1)
    assert r.timed_out and r.returncode == 124
    assert time.monotonic() - t0 < 30
    if box.cgroup is not None:
        assert _drained(box)
    assert box.run("echo still here").output == "still here\n"


def test_output_is_truncated_head_and_tail():
    with Sandbox(limits=SandboxLimits(output_bytes=1000)) as box:
        r = box.run("seq 1 100000")
        assert r.truncated and r.returncode == 0
        assert r.output.startswith("1\n2\n3\n") and r.output.endswith("99999\n100000\n")
        assert "output truncated" in r.output and len(r.output) < 1200
        small = box.run("echo hi; echo err >&2")
        assert not small.truncated and sorted(small.output.split()) == ["err", "hi"]


def test_files_copy_dirs_and_file_io(tmp_path):
    src = tmp_path / "repo"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "mod.py").write_text("X = 1\n")
    with Sandbox(files={"/workspace/a.txt": "A", "/etc/oc.conf": b"k=v"},
                 copy_dirs={str(src): "/workspace/repo"}) as box:
        assert box.run("cat a.txt /etc/oc.conf repo/pkg/mod.py").output == "Ak=vX = 1\n"
        box.write_file("/workspace/bin.dat", b"\x00\xffdata", mode=0o600)
        assert box.read_file("/workspace/bin.dat") == b"\x00\xffdata"
        assert box.run("stat -c %a /workspace/bin.dat").output.strip() == "600"
        with pytest.raises(FileNotFoundError):
            box.read_file("/workspace/missing")
        with pytest.raises(IsADirectoryError):
            box.read_file("/workspace")
        # read_file goes through the sandbox: a symlink to a host path leads nowhere
        box.run(f"ln -s {src}/pkg/mod.py /workspace/link")
        with pytest.raises(FileNotFoundError):
            box.read_file("/workspace/link")
        with pytest.raises(ValueError):
            box.write_file("relative.txt", "x")
    with pytest.raises(ValueError):
        Sandbox(files={"/proc/x": "no"})
    # new top-level folders (named so that the host cannot have them) belong to the episode
    top, made = f"/episode-{tmp_path.name}", f"/made-{tmp_path.name}"
    with Sandbox(files={f"{top}/x": "episode"}) as box:
        assert box.run(f"cat {top}/x; mkdir {made} && touch {made}/f").output == "episode"
        assert box.run(f"ls {made}").output == "f\n"  # top-level dirs persist between commands
    assert not Path(top).exists() and not Path(made).exists()


def test_concurrent_runs_are_independent(box):
    results = {}

    def job(i):
        results[i] = box.run(f"sleep 0.2; echo {i}")

    threads = [threading.Thread(target=job, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert {i: r.output for i, r in results.items()} == {i: f"{i}\n" for i in range(4)}


def test_persistent_shell_keeps_state_and_drives_interactive_programs(box):
    sh = box.shell()
    assert "/tmp" in sh.send("cd /tmp && export GREETING=hello && pwd")
    assert sh.send("echo $GREETING $PWD").startswith("hello /tmp")
    assert sh.send("python3 -q -i").endswith(">>> ")
    assert sh.send("6 * 7").startswith("42")
    assert "sandbox" in sh.send("exit()")
    out = sh.send("sleep 100; echo never", timeout=1)
    assert "never" not in out
    for _ in range(100):  # the Ctrl-C must find the sleep running (a loaded machine forks slowly)
        if box.run("grep -lx sleep /proc/[0-9]*/comm").returncode == 0:
            break
        time.sleep(0.1)
    assert "sandbox" in sh.send("\x03", timeout=15)  # Ctrl-C stops the sleep, the prompt returns
    assert sh.send("read -p 'name? ' n; echo got $n") == "name? "
    assert sh.send("bob").startswith("got bob")
    sh.close()
    with pytest.raises(RuntimeError):
        sh.send("echo x")


def test_close_kills_everything_and_removes_the_episode():
    box = Sandbox()
    root, cgroup = box.root, box.cgroup
    sh = box.shell()
    sh.send("sleep 1000 &")
    done = threading.Event()
    threading.Thread(target=lambda: (box.run("sleep 1000", timeout=120), done.set()), daemon=True).start()
    time.sleep(0.5)
    box.close()
    assert done.wait(30)
    assert not root.exists()
    if cgroup is not None:
        assert not cgroup.path.exists()
    with pytest.raises(SandboxError):
        box.run("true")
    box.close()  # idempotent


def test_background_jobs_outlive_their_command_and_die_with_the_episode():
    with Sandbox() as box:
        r = box.run("nohup sleep 888 >/dev/null 2>&1 & echo started", timeout=10)
        assert r.output == "started\n" and not r.timed_out
        # one pid namespace per episode: the next command sees the daemon (AgentBench's "start")
        assert "sleep 888" in box.run("ps -eo args").output
        # a background job that keeps the output pipe open does not hold run() to its timeout
        t0 = time.monotonic()
        r = box.run("sleep 999 & echo quick", timeout=20)
        assert r.output == "quick\n" and not r.timed_out and time.monotonic() - t0 < 10
        for _ in range(20):  # adopted orphans are reaped: no zombies pile up against pids.max
            box.run("(true &) ; true")
        assert "<defunct>" not in box.run("ps -eo stat,args").output
        pids = box.cgroup.pids() if box.cgroup else []
    if pids:
        assert all(not Path(f"/proc/{pid}").exists() for pid in pids)


def test_a_crashed_owner_leaks_no_process_and_its_leftovers_are_swept():
    code = ("import os\nfrom openclaw_rl.agentic.sandbox import Sandbox\nb = Sandbox()\n"
            "b.run('nohup sleep 4242 >/dev/null 2>&1 &')\n"
            "print(b.root, b.cgroup.path if b.cgroup else '', flush=True)\nos.kill(os.getpid(), 9)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=Path(__file__).resolve().parents[1])
    root, _, group = r.stdout.strip().partition(" ")
    assert root and Path(root).exists()  # SIGKILL leaves no time to clean up ...
    deadline = time.monotonic() + 10  # ... but the episode's pid 1 exits on EOF and takes all with it
    while "sleep 4242" in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    with Sandbox():  # the next sandbox sweeps what the dead owner left
        assert not Path(root).exists()
        assert not group or not Path(group).exists()


def test_ctrl_c_works_even_when_the_host_process_ignores_sigint():
    """A server started as ``nohup ... &`` inherits SIGINT ignored; the sandbox's processes must not."""
    import signal

    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with Sandbox() as box:
            sh = box.shell()
            sh.send("sleep 100; echo never", timeout=1)
            for _ in range(100):
                if box.run("grep -lx sleep /proc/[0-9]*/comm").returncode == 0:
                    break
                time.sleep(0.1)
            out = sh.send("\x03", timeout=15)
            assert "sandbox" in out and "never" not in out
    finally:
        signal.signal(signal.SIGINT, old)
