"""Issue 27: which CPU recipe cannot fall below the untrained baselines? Frozen MiniLM features, one pass.

    CONCORD_EMBEDDING_CACHE=DIR nice .venv/bin/python benchmarks/recipe_search.py features   # embeds into the cache
    .venv/bin/python benchmarks/recipe_search.py search --rows '[ROW, ...]'                   # heads only

``features`` packs every (context, response) pair of DailyDialog++ dev and test, GRADE DailyDialog and FED
turn level as QuantiDCE's ``windows`` model does (``ml.data.packing.pack_windows``, 128 tokens, the newest
context tokens kept), embeds each distinct text once through the on-disk cache (``ml.embedding``: a second
run reads them all back) and writes unit-length vectors of context, last turn and response per pair to
``--out`` (numpy), with the levels (DD++) and the human scores (GRADE, FED).

``search`` trains heads on DD++ dev and prints one JSON line per row and seed: DD++ validation accuracy
(test contexts 0–149: **the only column a choice may be made on**), DD++ test accuracy (150–), GRADE and
FED Overall Spearman, and the paired-bootstrap interval of Δρ against each untrained baseline.

``frontier`` asks whether *any* point a choice on DD++ validation could reach lies above both untrained
cosines at once (GRADE above ``cosine_last``, FED above ``cosine_context``): it prints the untrained blends
a·cos(context) + (1 − a)·cos(last turn), then follows each training run step by step (``--every``) —
QuantiDCE's MLR and MDD-Eval's 3-way cross-entropy, each through the real floor head
(``ml.models.floor.FloorHead``) from the whole-context cosine or from both windows, and MDD-Eval on random
and relevant responses only — and, with ``--plot``, draws every point as GRADE ρ against FED ρ."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("CONCORD_SHARED_DATA", ROOT.parent / "shared" / "data"))
VALIDATION_CONTEXTS = 150
LEVEL_KEYS = ("random_negative_responses", "adversarial_negative_responses", "positive_responses")


def ddpp_pairs(path: Path):
    from ml.data.levels import read_ddpp

    contexts = read_ddpp(path, fields=LEVEL_KEYS)
    pairs, levels, groups = [], [], []
    for g, c in enumerate(contexts):
        for level, responses in enumerate(c.levels, start=1):
            for r in responses:
                pairs.append((c.context, r))
                levels.append(level)
                groups.append(g)
    return pairs, {"level": np.array(levels), "group": np.array(groups)}


def human_pairs(path: Path, fmt: str):
    from metrics.benchmarking.judgments import read_set

    items = read_set(path, fmt).items
    pairs = [(item.turns, item.response) for item in items]
    qualities = sorted({q for item in items for q in item.human})
    return pairs, {q: np.array([item.human.get(q, np.nan) for item in items]) for q in qualities}


SETS = {"dev": lambda: ddpp_pairs(DATA / "dailydialog_pp/dev.json"),
        "test": lambda: ddpp_pairs(DATA / "dailydialog_pp/test.json"),
        "grade": lambda: human_pairs(DATA / "grade/dailydialog_EVAL.json", "grade"),
        "fed": lambda: human_pairs(DATA / "fed/fed-turn_eval.json", "fed")}


def features(args) -> None:
    import torch

    from ml.data.packing import LAST, RESPONSE, input_prefix, pack_windows
    from ml.embedding import embed
    from ml.models.encoder import load_encoder, load_tokenizer

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer, encoder = load_tokenizer(), load_encoder().eval()
    for name in args.sets.split(","):
        started, cpu = time.time(), time.process_time()
        pairs, extra = SETS[name]()
        packed = [pack_windows(tokenizer, c or [" "], r, max_length=128) for c, r in pairs]
        columns = {}
        for prefix, column in (("", "ctx"), (RESPONSE, "resp"), (LAST, "last")):
            singles = [{k[len(prefix):]: v for k, v in p.items() if input_prefix(k) == prefix} for p in packed]
            rows = []
            for start in range(0, len(singles), args.chunk):  # each chunk lands in the cache as it is done
                rows += embed(encoder, singles[start:start + args.chunk], tokenizer.pad_token_id, torch.device("cpu"))
                print(json.dumps({"set": name, "column": column, "done": min(start + args.chunk, len(singles)),
                                  "of": len(singles), "wall_s": round(time.time() - started, 1)}), flush=True)
            columns[column] = torch.nn.functional.normalize(torch.stack(rows), dim=-1).numpy()
        np.savez(out / f"{name}.npz", **columns, **extra)
        print(json.dumps({"set": name, "pairs": len(pairs), "wall_s": round(time.time() - started, 1),
                          "cpu_s": round(time.process_time() - cpu, 1)}), flush=True)


# -- search ------------------------------------------------------------------------------------------
def load(out: Path, name: str) -> dict:
    with np.load(out / f"{name}.npz") as data:
        return {k: data[k] for k in data.files}


def pair_block(c, r):
    """[u; v; |u − v|; u∘v; cos] of unit vectors (ml.models.quantidce.pair_features)."""
    return np.concatenate([c, r, np.abs(c - r), c * r, np.sum(c * r, 1, keepdims=True)], 1).astype(np.float32)


def ranking_accuracy(scores, level, group) -> float:
    """Share of different-level response pairs of one context ranked right (ties half)."""
    right, total = 0.0, 0
    order = np.argsort(group, kind="stable")
    scores, level, group = scores[order], level[order], group[order]
    bounds = np.flatnonzero(np.diff(group)) + 1
    for s, lv in zip(np.split(scores, bounds), np.split(level, bounds), strict=True):
        d_level = lv[:, None] - lv[None, :]
        d_score = s[:, None] - s[None, :]
        mask = d_level > 0
        right += float(np.sum((d_score[mask] > 0) + 0.5 * (d_score[mask] == 0)))
        total += int(mask.sum())
    return right / total


def split_test(test: dict) -> tuple[np.ndarray, np.ndarray]:
    return test["group"] < VALIDATION_CONTEXTS, test["group"] >= VALIDATION_CONTEXTS


class Head:
    """What a row trains: ``windows`` (QuantiDCE's MLP shared over two windows, logits averaged) and variants
    that start from the untrained cosines (``floor``)."""

    def __init__(self, kind: str, width: int, hidden: int, seed: int, scale: float, bound: float,
                 base: str = "blend"):
        import torch

        torch.manual_seed(seed)
        self.kind, self.bound = kind, bound
        self.mlp = torch.nn.Sequential(torch.nn.Linear(width, hidden // 2), torch.nn.ELU(),
                                       torch.nn.Linear(hidden // 2, hidden // 4), torch.nn.ELU(),
                                       torch.nn.Linear(hidden // 4, 1))
        self.params = list(self.mlp.parameters())
        if kind != "windows":  # the correction starts at zero: the model starts as the untrained blend
            torch.nn.init.zeros_(self.mlp[-1].weight)
            torch.nn.init.zeros_(self.mlp[-1].bias)
            # the untrained signal it starts from: both cosines (blend), or one window's alone
            start = {"blend": [scale, scale], "ctx": [2 * scale, 0.0], "last": [0.0, 2 * scale]}[base]
            self.weights = torch.nn.Parameter(torch.tensor(start))
            self.bias = torch.nn.Parameter(torch.tensor(-scale))
            self.params += [self.weights, self.bias]

    def logits(self, x, cosines):
        """x: (B, 2, D) windows features; cosines: (B, 2) = (cos context, cos last turn)."""
        g = self.mlp(x).squeeze(-1).mean(-1)
        if self.kind == "windows":
            return g
        base = (cosines * self.weights).sum(-1) / 2 + self.bias
        if self.kind == "bounded":
            return base + self.bound * g.tanh()
        return base + g


def prepare(data: dict):
    import torch

    x = np.stack([pair_block(data["ctx"], data["resp"]), pair_block(data["last"], data["resp"])], 1)
    cosines = np.stack([np.sum(data["ctx"] * data["resp"], 1), np.sum(data["last"] * data["resp"], 1)], 1)
    return torch.from_numpy(x), torch.from_numpy(cosines.astype(np.float32))


def train_row(row: dict, dev: dict, evaluate) -> tuple[object, list[dict]]:
    import torch

    from ml.losses.mlr import MultiLevelRankingLoss

    torch.set_num_threads(1)
    x, cosines = prepare(dev)
    contexts = int(dev["group"].max()) + 1
    per_context = np.bincount(dev["group"])
    assert (per_context == 15).all()
    x, cosines = x.view(contexts, 15, 2, -1), cosines.view(contexts, 15, 2)
    head = Head(row.get("head", "windows"), x.shape[-1], 384, row["seed"], row.get("scale", 10.0), row.get("bound", 1.0),
                row.get("base", "blend"))
    optimizer = torch.optim.AdamW(head.params, lr=row.get("lr", 1e-3), weight_decay=row.get("wd", 0.0))
    loss_fn = MultiLevelRankingLoss(0.3, 0.1)
    batch = 3
    steps_per_epoch = -(-contexts // batch)
    warmup = max(1, int(0.1 * steps_per_epoch))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
    history = [evaluate(head, 0)] if row.get("head", "windows") != "windows" else []
    best = (history[0]["val"], 0, [p.detach().clone() for p in head.params]) \
        if history else (-1.0, -1, None)
    for epoch in range(1, row.get("epochs", 5) + 1):
        order = torch.randperm(contexts, generator=torch.Generator().manual_seed(row["seed"] * 1000 + epoch))
        for start in range(0, contexts, batch):
            chosen = order[start:start + batch]
            logits = head.logits(x[chosen].reshape(-1, 2, x.shape[-1]), cosines[chosen].reshape(-1, 2))
            loss, _ = loss_fn(torch.sigmoid(logits).view(len(chosen), 3, 5))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(head.params, 1.0)
            optimizer.step()
            scheduler.step()
        history.append(evaluate(head, epoch))
        if history[-1]["val"] > best[0]:
            best = (history[-1]["val"], epoch, [p.detach().clone() for p in head.params])
    with torch.no_grad():
        for i, p in enumerate(head.params):
            p.copy_(best[2][i])
    return head, history, best[1]


def spearman(a, b):
    from scipy import stats

    keep = ~np.isnan(b)
    return float(stats.spearmanr(a[keep], b[keep]).statistic)


def bootstrap(a, b, human, resamples=2000, seed=71):
    """Paired bootstrap over items of ρ(a, human) − ρ(b, human): (Δ, 2.5 %, 97.5 %)."""
    from scipy import stats

    keep = ~np.isnan(human)
    a, b, human = a[keep], b[keep], human[keep]
    rng = np.random.default_rng(seed)
    deltas = []
    for _ in range(resamples):
        i = rng.integers(0, len(a), len(a))
        deltas.append(stats.spearmanr(a[i], human[i]).statistic - stats.spearmanr(b[i], human[i]).statistic)
    return [round(spearman(a, human) - spearman(b, human), 3), *(round(float(q), 3) for q in np.percentile(deltas, [2.5, 97.5]))]


def search(args) -> None:
    import torch

    from metrics.implementations.coherence import penalty

    out = Path(args.out)
    sets = {name: load(out, name) for name in ("dev", "test", "grade", "fed")}
    val, held = split_test(sets["test"])
    prepared = {name: prepare(data) for name, data in sets.items() if name != "dev"}
    texts = {name: SETS[name]()[0] for name in ("grade", "fed")} if args.heuristic else {}

    def baselines(name):
        x, cosines = prepared[name]
        cos = cosines.numpy()
        out_ = {"cos_last": cos[:, 1], "cos_ctx": cos[:, 0], "cos_sum": cos.sum(1)}
        if name in texts:
            out_["coherence"] = 1 - np.array([penalty(r) for _, r in texts[name]]) * (1 - cos[:, 1])
        return out_

    def scores_of(head, name):
        x, cosines = prepared[name]
        with torch.no_grad():
            return head.logits(x, cosines).numpy().astype(np.float64)

    def evaluate(head, epoch):
        test = scores_of(head, "test")
        return {"epoch": epoch, "val": ranking_accuracy(test[val], sets["test"]["level"][val], sets["test"]["group"][val])}

    def report(label, grade, fed, test):
        row = {"row": label,
               "ddpp_val": round(ranking_accuracy(test[val], sets["test"]["level"][val], sets["test"]["group"][val]), 4),
               "ddpp_test": round(ranking_accuracy(test[held], sets["test"]["level"][held], sets["test"]["group"][held]), 4),
               "grade": round(spearman(grade, sets["grade"]["human:coherence"]), 4),
               "fed": round(spearman(fed, sets["fed"]["human:overall"]), 4)}
        fed_other = [k for k in sets["fed"] if k.startswith("human:") and k != "human:overall"]
        row["fed_other"] = round(float(np.mean([spearman(fed, sets["fed"][k]) for k in fed_other])), 4)
        return row

    base = {name: baselines(name) for name in ("grade", "fed", "test")}
    dev_x, dev_cos = prepare(sets["dev"])

    def scores_of_dev(head):
        with torch.no_grad():
            return head.logits(dev_x, dev_cos).numpy().astype(np.float64)

    def ensembles(dev_model, scores):
        """s = z(model) + w·z(cos ctx) (+ w·z(cos last)), z from DD++ dev; w chosen by DD++ validation."""
        dc = dev_cos.numpy().astype(np.float64)
        z = {"model": (dev_model.mean(), dev_model.std()), "ctx": (dc[:, 0].mean(), dc[:, 0].std()),
             "last": (dc[:, 1].mean(), dc[:, 1].std())}
        out = []
        for with_last in (False, True):
            for w in (0.25, 0.5, 1.0, 2.0):
                mixed = {}
                for name in ("grade", "fed", "test"):
                    m = (scores[name] - z["model"][0]) / z["model"][1]
                    c = (base[name]["cos_ctx"] - z["ctx"][0]) / z["ctx"][1]
                    l_ = (base[name]["cos_last"] - z["last"][0]) / z["last"][1]
                    mixed[name] = m + w * c + (w * l_ if with_last else 0)
                row = report(f"w={w}{' +last' if with_last else ''}", mixed["grade"], mixed["fed"], mixed["test"])
                out.append({k: row[k] for k in ("row", "ddpp_val", "ddpp_test", "grade", "fed")})
        return out
    if args.baselines:
        for key in base["test"]:
            print(json.dumps(report(key, base["grade"][key], base["fed"][key], base["test"][key])), flush=True)
    for row in json.loads(args.rows):
        for seed in args.seeds:
            started = time.time()
            head, history, best_epoch = train_row({**row, "seed": seed}, sets["dev"], evaluate)
            scores = {name: scores_of(head, name) for name in ("grade", "fed", "test")}
            result = {**report(json.dumps(row) + f" seed {seed}", scores["grade"], scores["fed"], scores["test"]),
                      "best_epoch": best_epoch, "val_by_epoch": [round(h["val"], 4) for h in history],
                      "s": round(time.time() - started, 1)}
            if args.ensemble:
                dev_scores = scores_of_dev(head)
                result["ensembles"] = ensembles(dev_scores, scores)
            if args.intervals:
                for key in ("cos_last", "cos_ctx"):
                    result[f"vs_{key}"] = {s: bootstrap(scores[s], base[s][key], sets[s]["human:" + q])
                                           for s, q in (("grade", "coherence"), ("fed", "overall"))}
            print(json.dumps(result), flush=True)


# -- frontier ----------------------------------------------------------------------------------------
FRONTIER_RUNS = (  # (label, loss, windows, levels trained on)
    ("QuantiDCE MLR, both windows", "mlr", 2, (1, 2, 3)),
    ("QuantiDCE MLR, whole context", "mlr", 1, (1, 2, 3)),
    ("MDD-Eval CE, both windows", "ce", 2, (1, 2, 3)),
    ("MDD-Eval CE, whole context", "ce", 1, (1, 2, 3)),
    ("MDD-Eval CE, random vs relevant only", "ce", 2, (1, 3)),
)


def floor_head(loss: str, width: int, seed: int):
    """The recipes' heads, wrapped in the real floor (``ml.models.floor``): QuantiDCE's MLP (one output) or
    MDD-Eval's (three classes, the floor on "relevant")."""
    import torch
    from torch import nn

    from ml.models.floor import FloorHead

    torch.manual_seed(seed)
    hidden = 384
    if loss == "mlr":
        return FloorHead(nn.Sequential(nn.Linear(width, hidden // 2), nn.ELU(), nn.Linear(hidden // 2, hidden // 4),
                                       nn.ELU(), nn.Linear(hidden // 4, 1)))
    return FloorHead(nn.Sequential(nn.Dropout(0.1), nn.Linear(width, hidden), nn.Tanh(), nn.Dropout(0.1),
                                   nn.Linear(hidden, 3)), column=2)


def frontier(args) -> None:
    import torch

    from ml.losses.mlr import MultiLevelRankingLoss

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    sets = {name: load(out, name) for name in ("dev", "test", "grade", "fed")}
    val, held = split_test(sets["test"])
    prepared, cosines = {}, {}
    for name, data in sets.items():
        prepared[name], cos = prepare(data)  # windows features; (cos context, cos last turn) per pair
        cosines[name] = cos.numpy()
    human = {"grade": sets["grade"]["human:coherence"], "fed": sets["fed"]["human:overall"]}

    def measure(scores: dict) -> dict:
        t = sets["test"]
        return {"ddpp_val": round(ranking_accuracy(scores["test"][val], t["level"][val], t["group"][val]), 4),
                "grade": round(spearman(scores["grade"], human["grade"]), 4),
                "fed": round(spearman(scores["fed"], human["fed"]), 4)}

    points = []
    for a in np.linspace(0, 1, 11):
        scores = {n: a * cosines[n][:, 0] + (1 - a) * cosines[n][:, 1] for n in ("test", "grade", "fed")}
        points.append({"run": "untrained blend", "a": round(float(a), 1), **measure(scores)})
        print(json.dumps(points[-1]), flush=True)

    for label, loss, windows, levels in FRONTIER_RUNS:
        for seed in args.seeds:
            head = floor_head(loss, prepared["dev"].shape[-1], seed)

            def logits(x, head=head, windows=windows):
                return head(x[:, :windows]).mean(1)  # one shared head per window, averaged (QuantiDCE's windows)

            def score(x, logits=logits, loss=loss):
                return logits(x)[:, 0] if loss == "mlr" else torch.softmax(logits(x), -1)[:, 2]

            def evaluate(step, head=head, score=score, label=label, seed=seed):
                head.eval()
                with torch.no_grad():
                    scores = {n: score(prepared[n]).numpy().astype(np.float64) for n in ("test", "grade", "fed")}
                head.train()
                return {"run": label, "seed": seed, "step": step, **measure(scores)}

            dev_x, level = prepared["dev"], torch.from_numpy(sets["dev"]["level"])
            optimizer = torch.optim.AdamW(head.parameters(), lr=args.lr)
            history, step = [evaluate(0)], 0
            if loss == "mlr":  # a batch of 3 contexts × (3 levels × 5 responses), as QuantiDCE trains
                by_context = dev_x.view(-1, 15, *dev_x.shape[1:])
                loss_fn = MultiLevelRankingLoss(0.3, 0.1)
                batches = [(by_context[i:i + 3],) for i in range(0, len(by_context), 3)]
            else:  # MDD-Eval: labelled pairs, 32 a batch
                keep = torch.isin(level, torch.tensor(levels))
                x, y = dev_x[keep], level[keep] - 1
                batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, len(y), 32)]
            for epoch in range(args.epochs):
                order = torch.randperm(len(batches), generator=torch.Generator().manual_seed(seed * 1000 + epoch))
                for b in order.tolist():
                    if loss == "mlr":
                        (chunk,) = batches[b]
                        s = torch.sigmoid(score(chunk.reshape(-1, *chunk.shape[2:])))
                        value, _ = loss_fn(s.view(len(chunk), 3, 5))
                    else:
                        xb, yb = batches[b]
                        value = torch.nn.functional.cross_entropy(logits(xb), yb)
                    optimizer.zero_grad()
                    value.backward()
                    optimizer.step()
                    step += 1
                    if step % args.every == 0:
                        history.append(evaluate(step))
            best = max(history, key=lambda h: h["ddpp_val"])
            for h in history:
                points.append({**h, "chosen": h is best})
                print(json.dumps(points[-1]), flush=True)
    if args.plot:
        plot_frontier(points, Path(args.plot))


def plot_frontier(points: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    blend = [p for p in points if p["run"] == "untrained blend"]
    last, ctx = blend[0], blend[-1]
    above = sum(p["fed"] > ctx["fed"] and p["grade"] > last["grade"] for p in points)
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    ax.fill_between([ctx["fed"], 0.45], last["grade"], 0.45, color="#2ca02c", alpha=0.08,
                    label=f"above both untrained cosines: {above} of {len(points)} points")
    ax.axvline(ctx["fed"], color="#555", lw=0.8, ls="--")
    ax.axhline(last["grade"], color="#555", lw=0.8, ls="--")
    ax.plot([p["fed"] for p in blend], [p["grade"] for p in blend], "k.-", label="untrained a·cos(context) + (1−a)·cos(last)")
    ax.annotate("cosine_context", (ctx["fed"], ctx["grade"]), textcoords="offset points", xytext=(-70, -12), fontsize=8)
    ax.annotate("cosine_last", (last["fed"], last["grade"]), textcoords="offset points", xytext=(-62, -4), fontsize=8)
    runs = [r for r in dict.fromkeys(p["run"] for p in points) if r != "untrained blend"]
    colours = plt.get_cmap("tab10")
    for i, run in enumerate(runs):
        mine = [p for p in points if p["run"] == run]
        ax.scatter([p["fed"] for p in mine], [p["grade"] for p in mine], s=10, color=colours(i), alpha=0.5, label=run)
        chosen = [p for p in mine if p.get("chosen")]
        ax.scatter([p["fed"] for p in chosen], [p["grade"] for p in chosen], s=60, marker="*", color=colours(i),
                   edgecolors="k", linewidths=0.5)
    ax.set_xlabel("FED turn level, Spearman ρ with Overall (375)")
    ax.set_ylabel("GRADE DailyDialog, Spearman ρ with the mean score (300)")
    ax.set_title("Every step of every run (seeds pooled); ★ = the point DD++ validation chooses", fontsize=9)
    ax.set_xlim(min(p["fed"] for p in points) - 0.02, 0.45)
    ax.set_ylim(min(p["grade"] for p in points) - 0.02, 0.45)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("features")
    f.add_argument("--sets", default="grade,fed,test,dev")
    f.add_argument("--out", default="/tmp/recipe_features")
    f.add_argument("--chunk", type=int, default=2000)
    f.add_argument("--threads", type=int, default=2)
    s = sub.add_parser("search")
    s.add_argument("--out", default="/tmp/recipe_features")
    s.add_argument("--rows", default="[]")
    s.add_argument("--seeds", type=int, nargs="+", default=[71, 13, 42])
    s.add_argument("--baselines", action="store_true")
    s.add_argument("--heuristic", action="store_true", help="also the coherence heuristic (reads the texts)")
    s.add_argument("--intervals", action="store_true", help="paired bootstrap against the two cosines")
    s.add_argument("--ensemble", action="store_true", help="also z-score ensembles with the cosines")
    fr = sub.add_parser("frontier")
    fr.add_argument("--out", default="/tmp/recipe_features")
    fr.add_argument("--seeds", type=int, nargs="+", default=[71, 13, 42])
    fr.add_argument("--epochs", type=int, default=5, help="as the default recipes' teacher and MLR (default 5)")
    fr.add_argument("--every", type=int, default=60, help="evaluate every N optimizer steps (default 60)")
    fr.add_argument("--lr", type=float, default=1e-3, help="the default recipes' head learning rate (default 1e-3)")
    fr.add_argument("--threads", type=int, default=2)
    fr.add_argument("--plot", default="", help="draw GRADE ρ against FED ρ into this PNG")
    args = parser.parse_args()
    {"features": features, "search": search, "frontier": frontier}[args.command](args)


if __name__ == "__main__":
    main()
