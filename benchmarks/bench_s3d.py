"""S3D encoder speed and memory: seconds of compute per minute of 640x360 video at the default
sampling (16 fps, 224 px centre crop, one 16-frame window per second), decoding and the network
apart, and the peak memory of a process that encodes the video. Targets: at most 30 s per
video-minute on 2 CPU cores; the parallel pipeline no slower than the serial path on the CPU; on a
GPU, end to end within 3x of the network alone; and never slower than the reference implementation
on the same clips (``--reference``: a checkout's ``s3dg.py`` of github.com/antoine77340/S3D_HowTo100M,
read from the user's disk; its code is not part of this repository).

    python benchmarks/bench_s3d.py                                   # 60 s of video, 2 threads, CPU
    python benchmarks/bench_s3d.py --workers 1 2 4 8 --encode-workers 1 2 --encode-rounds 2
    python benchmarks/bench_s3d.py --reference ~/S3D_HowTo100M/s3dg.py --reference-seconds 12
    python benchmarks/bench_s3d.py --device cuda --seconds 300 --json s3d-gpu.json
    python benchmarks/bench_s3d.py --weights s3d/s3d_howto100m.pth   # the release (default: the fixture's rule)

A 640x360, 30 fps H.264 video of moving shapes is written to a temporary folder first. Each
measurement runs in a fresh process (so its peak memory is its own): the decoding alone through the
pipeline of ``kepp_core.video.encode.encode_files`` with 1, 2, 4, 8 decoding threads (``--workers``:
decord at the crop's scale, the windows cut, a network that does nothing), the network alone on the
windows in memory, and ``encode_files`` end to end with each of ``--encode-workers`` (default: the
encoder's own: 1 on the CPU, one per core but the network's on a GPU), alternated ``--encode-rounds``
times. With ``--reference`` both networks run on the same windows of the first
``--reference-seconds`` seconds, alternated ``--rounds`` times, with the same weights (the
fixture's rule by default: speed does not depend on the values) and threads, and their outputs
are compared. Times are wall seconds; the CPU seconds beside them show how much of the wall time
the process got on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WIDTH, HEIGHT, NATIVE_FPS = 640, 360, 30


def make_video(path: Path, seconds: int) -> None:
    """``seconds`` of 640x360 30 fps video: drifting coloured rectangles on a moving gradient."""
    import numpy as np

    from kepp_core.video import write_video

    rng = np.random.default_rng(0)
    boxes = rng.integers(0, [WIDTH - 80, HEIGHT - 60], size=(6, 2))
    colours = rng.integers(40, 255, size=(6, 3))
    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH]

    def frames():
        for i in range(seconds * NATIVE_FPS):
            f = np.empty((HEIGHT, WIDTH, 3), np.uint8)
            f[..., 0] = (xx + 3 * i) % 256
            f[..., 1] = (yy + i) % 256
            f[..., 2] = 96
            for (x, y), c in zip(boxes, colours):
                x, y = (x + 4 * i) % (WIDTH - 80), (y + 2 * i) % (HEIGHT - 60)
                f[y:y + 60, x:x + 80] = c
            yield f

    write_video(path, frames(), NATIVE_FPS)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _windows(video: Path, spec: str, seconds: float | None):
    """The video's windows ``[S, 16, 224, 224, 3]`` as the encoder cuts them (the first ``seconds``)."""
    import numpy as np

    from kepp_core.video.encode import _reader, frame_plan
    from kepp_core.video.decode import decode_frames
    from kepp_core.video.s3d import second_windows
    from kepp_core.video.s3d_spec import FPS, S3DSpec

    class Sizer:  # what the decoder asks an encoder for, without loading a network
        sample_fps, exact_fps, frame_size = float(FPS), True, None

        def decode_size(self, w, h):
            from kepp_core.video.s3d_spec import decode_size
            return decode_size(w, h, S3DSpec.parse(spec).size)

    enc = Sizer()
    reader = _reader(video, enc)
    indices, fps = frame_plan(len(reader), float(reader.get_avg_fps()), enc)
    if seconds is not None:
        indices = indices[: int(seconds * fps)]
    out, step = [], int(32 * fps)
    for a in range(0, len(indices), step):
        out.append(second_windows(decode_frames(reader, indices[a:a + step], video), fps, S3DSpec.parse(spec).size))
    return np.concatenate(out)


class DecodeOnly:
    """What the S3D encoder asks of the decoder (rate, size, windows, chunks), with a network that does
    nothing: ``encode_files`` with it measures the decoding pipeline alone."""

    sample_fps, exact_fps, frame_size, min_frames, name = 16.0, True, None, 16, "decode-only"

    def __init__(self, spec: str, batch: int) -> None:
        from kepp_core.video.s3d_spec import S3DSpec

        self.size = S3DSpec.parse(spec).size
        self.chunk_seconds = batch * max(1, 16 // batch)  # as the encoder's

    def decode_size(self, w, h):
        from kepp_core.video.s3d_spec import decode_size
        return decode_size(w, h, self.size)

    def prepare(self, frames, fps):
        from kepp_core.video.s3d import second_windows
        return second_windows(frames, fps, self.size)

    def embed(self, windows):
        import numpy as np
        return np.zeros((len(windows), 1), np.float32)

    def __call__(self, frames, fps):  # the serial path: decode, cut, nothing
        return self.embed(self.prepare(frames, fps))


def _ours(windows, spec: str):
    """Our encoder's network on the windows (its batches, threads and device); ``(embeddings [S, 512], seconds)``."""
    from kepp_core.video.s3d import S3DEncoder

    enc = S3DEncoder(spec)
    enc.embed(windows[:1])  # warm-up: oneDNN builds its kernels on the first call of each shape
    t0 = time.perf_counter()
    out = enc.embed(windows)  # (its last batch waits for the GPU: the embeddings come back to the CPU)
    return out, time.perf_counter() - t0


def _reference(windows, reference: Path, weights: Path, words: Path, batch: int, device: str):
    """The reference code's network on the same windows, the same weights; ``(embeddings, seconds)``."""
    import importlib.util

    import numpy as np
    import torch

    spec = importlib.util.spec_from_file_location("s3dg_reference", reference)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    net = module.S3D(str(words), 512)
    net.load_state_dict(torch.load(weights, weights_only=True, map_location="cpu"))
    net = net.eval().to(device)
    with torch.no_grad():
        net(torch.from_numpy(windows[:1]).to(device).permute(0, 4, 1, 2, 3).float().div_(255))
        t0 = time.perf_counter()
        out = []
        for i in range(0, len(windows), batch):
            x = torch.from_numpy(windows[i:i + batch]).to(device).permute(0, 4, 1, 2, 3).float().div_(255)
            out.append(net(x)["video_embedding"].cpu().numpy())
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    return np.concatenate(out), time.perf_counter() - t0


def child(args) -> dict:
    """One measurement in this (fresh) process; a JSON line on stdout."""
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    spec = f"s3d:{args.weights_file}" + (f",batch={args.batch}" if args.batch else "") + \
        (f",device={args.device}" if args.device else "")
    c0, t0 = _cpu(), time.perf_counter()
    if args.child in ("encode", "decode"):
        from kepp_core.video.encode import encode_files
        from kepp_core.video.encoders import get_encoder

        gpu = (args.device or "cpu").startswith("cuda")
        enc = get_encoder(spec) if args.child == "encode" else DecodeOnly(spec, args.batch or (32 if gpu else 2))
        workers = args.decode_workers or getattr(enc, "decode_workers", 1)
        t0, c0 = time.perf_counter(), _cpu()  # loading the weights is not encoding
        _, feats, seconds = next(encode_files([args.video], enc, workers))
        return {"wall": time.perf_counter() - t0, "cpu": _cpu() - c0, "seconds": seconds, "rows": len(feats),
                "workers": workers, "peak_mb": _peak_mb()}
    windows = _windows(Path(args.video), spec, args.limit)
    c0 = _cpu()
    if args.child == "ours":
        emb, wall = _ours(windows, spec)
    else:
        emb, wall = _reference(windows, Path(args.reference), Path(args.weights_file), Path(args.words_file),
                               args.batch or 4, args.device or "cpu")
    np.save(args.out, emb)
    return {"wall": wall, "cpu": _cpu() - c0, "windows": len(windows), "peak_mb": _peak_mb()}


def run_child(args, kind: str, **extra) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--video", str(args.video), "--weights-file",
           str(args.weights_file), "--words-file", str(args.words_file), "--threads", str(args.threads)]
    if args.batch:
        cmd += ["--batch", str(args.batch)]
    if args.device:
        cmd += ["--device", args.device]
    for k, v in extra.items():
        if v is not None:
            cmd += [f"--{k.replace('_', '-')}", str(v)]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{kind} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _release(args, work: Path) -> None:
    """The weights and word list to run: the user's release, or the fixture's rule at the release's size."""
    import numpy as np
    import torch

    from kepp_core.video.s3d import rule_state_dict

    if args.weights:
        args.weights_file = Path(args.weights)
        args.words_file = args.weights_file.parent / "s3d_dict.npy" if not args.words else Path(args.words)
        return
    vocabulary = 66250  # the release's: the reference network is built with it
    args.weights_file, args.words_file = work / "s3d_howto100m.pth", work / "s3d_dict.npy"
    torch.save(rule_state_dict(vocabulary), args.weights_file)
    np.save(args.words_file, np.array([f"w{i}" for i in range(vocabulary - 1)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=60, help="length of the test video")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads (torch intra-op)")
    ap.add_argument("--batch", type=int, default=None,
                    help="one-second windows per network call (default: the encoder's, 2 on the CPU, 32 on a GPU)")
    ap.add_argument("--device", default=None, help="cuda: run the networks on the GPU (default: cpu)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8],
                    help="decoding threads of the decode-only measurements")
    ap.add_argument("--encode-workers", type=int, nargs="+", default=None,
                    help="decoding threads of the end-to-end measurements (default: the encoder's own)")
    ap.add_argument("--encode-rounds", type=int, default=1, help="alternated rounds of the end-to-end measurements")
    ap.add_argument("--json", default=None, help="also write every measurement to this JSON file")
    ap.add_argument("--weights", default=None, help="s3d_howto100m.pth (default: the fixture's rule, same shapes)")
    ap.add_argument("--words", default=None, help="its s3d_dict.npy (default: beside the weights)")
    ap.add_argument("--reference", default=None, help="the reference code's s3dg.py, to compare with")
    ap.add_argument("--reference-seconds", type=int, default=12, help="seconds of video both networks run")
    ap.add_argument("--rounds", type=int, default=2, help="alternated rounds of ours and the reference")
    # the child processes' own options
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--video", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--weights-file", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--words-file", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=float, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--decode-workers", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    with tempfile.TemporaryDirectory(prefix="kepp-s3d-bench-") as tmp:
        work = Path(tmp)
        _release(args, work)
        args.video = work / "video.mp4"
        t0 = time.perf_counter()
        make_video(args.video, args.seconds)
        made = time.perf_counter() - t0
        load = os.getloadavg()[0]
        decode = [run_child(args, "decode", decode_workers=w) for w in args.workers]
        net = run_child(args, "ours", out=work / "ours.npy")
        rounds = [[run_child(args, "encode", decode_workers=w) for w in (args.encode_workers or [None])]
                  for _ in range(args.encode_rounds)]
        report(args, made, load, decode, net, rounds)
        if args.reference:
            compare(args, work)


def report(args, made: float, load: float, decode: list[dict], net: dict, rounds: list[list[dict]]) -> None:
    """The tables: decoding by threads, the network alone, end to end by threads and round; the targets."""
    seconds = rounds[0][0]["seconds"]
    per_min = 60.0 / seconds
    gpu = (args.device or "cpu").startswith("cuda")
    print(f"S3D encoder: {seconds:.0f} s of {WIDTH}x{HEIGHT} {NATIVE_FPS} fps video (written in {made:.0f} s), "
          f"16 fps / 224 px / 16-frame windows, batch {args.batch or 'default'}, {args.threads} threads, device "
          f"{args.device or 'cpu'}, {os.cpu_count()} cores, load average {load:.1f} at start")
    print(f"{'stage':<44} {'wall s':>8} {'cpu s':>8} {'wall s per video-min':>21} {'peak RSS MB':>12}")
    rows = [(f"decode + crop, {r['workers']} thread{'s' if r['workers'] > 1 else ''} "
             f"(x{decode[0]['wall'] / r['wall']:.2f})", r) for r in decode]
    rows.append(("network (windows in memory)", net))
    for k, rs in enumerate(rounds):
        rows += [(f"end to end, {r['workers']} decoding thread{'s' if r['workers'] > 1 else ''}"
                  + (f", round {k + 1}" if len(rounds) > 1 else ""), r) for r in rs]
    for name, r in rows:
        print(f"{name:<44} {r['wall']:>8.2f} {r['cpu']:>8.1f} {r['wall'] * per_min:>21.2f} {r['peak_mb']:>12.0f}")
    ends = {}
    for rs in rounds:
        for r in rs:
            ends.setdefault(r["workers"], []).append(r["wall"] * per_min)
    best = {w: min(v) for w, v in ends.items()}
    if gpu:
        ratio = max(best.values()) / (net["wall"] * per_min)
        print(f"target end to end <= 3x the network alone on the GPU: {'met' if ratio <= 3 else 'NOT met'} "
              f"({ratio:.2f}x: {max(best.values()):.2f} vs {net['wall'] * per_min:.2f} s per video-minute)")
    else:
        worst = max(best.values())
        print(f"target <= 30 s per video-minute on 2 cores: {'met' if worst <= 30 else 'NOT met'} ({worst:.1f} s)")
        if len(best) > 1 and 1 in best:
            print("end to end by decoding threads, best of the rounds (s per video-minute): "
                  + ", ".join(f"{w}: {v:.1f}" for w, v in sorted(best.items())))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": args.device or "cpu", "threads": args.threads,
                                               "cores": os.cpu_count(), "load": load, "seconds": seconds,
                                               "decode": decode, "network": net, "encode": rounds}, indent=2))


def compare(args, work: Path) -> None:
    """Ours and the reference on the same windows, alternated; the ratio and the outputs' agreement."""
    import numpy as np

    ours, ref = [], []
    for _ in range(args.rounds):
        ours.append(run_child(args, "ours", limit=args.reference_seconds, out=work / "a.npy"))
        ref.append(run_child(args, "reference", limit=args.reference_seconds, reference=args.reference,
                             out=work / "b.npy"))
    a, b = np.load(work / "a.npy"), np.load(work / "b.npy")
    diff = float(np.abs(a - b).max() / np.abs(b).max())
    n = ours[0]["windows"]
    print(f"\nreference network ({args.reference}) on the same {n} windows, {args.rounds} alternated rounds:")
    print(f"{'network':<12} {'wall s per round':>34} {'cpu s':>8} {'peak RSS MB':>12}")
    for name, rs in (("ours", ours), ("reference", ref)):
        walls = " ".join(f"{r['wall']:.1f}" for r in rs)
        print(f"{name:<12} {walls:>34} {sum(r['cpu'] for r in rs) / len(rs):>8.1f} {max(r['peak_mb'] for r in rs):>12.0f}")
    ratio = [r["wall"] / o["wall"] for o, r in zip(ours, ref)]
    print(f"reference / ours wall time per round: {' '.join(f'{x:.2f}' for x in ratio)} "
          f"(median {float(np.median(ratio)):.2f}); outputs agree to {diff:.1e} (max |diff| / max |ref|)")


if __name__ == "__main__":
    main()
