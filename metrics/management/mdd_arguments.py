"""``train_metric mdd_eval``'s own options (MDD-Eval's stages: teacher, augment, student), kept apart
from the shared command: option -> MDDEvalConfig field."""
import argparse

MDD_STAGES = ("teacher", "augment", "student")
MDD_OPTIONS = {
    "dataset": "train_data", "sources": "sources", "per_technique": "per_technique",
    "max_context_turns": "max_context_turns", "pairs_limit": "pairs_limit", "mask_model": "mask_model",
    "translate_forward": "translate_forward", "translate_backward": "translate_backward", "generator": "generator_model",
    "threshold": "threshold", "balance": "balance", "label_smoothing": "label_smoothing", "kl_weight": "kl_weight",
    "kl_temperature": "kl_temperature", "mlm_weight": "mlm_weight", "mlm_probability": "mlm_probability",
}


def add_mdd_arguments(parser) -> None:
    group = parser.add_argument_group("mdd_eval", "MDD-Eval: --stage teacher, then augment, then student "
                                                   "(--init-from the teacher, --dataset the augmented set)")
    group.add_argument("--dataset", help="student: the augmented data set (a TrainingDataset name or a JSON-lines file)")
    group.add_argument("--sources", help="augment: dialogue files (JSON lines) and corpus:SLUG (corpus:* = all), "
                                         "comma-separated (default DailyDialog++ dev + positives)")
    from ml.trainers.mdd_config import MDDEvalConfig

    for option, kind, text in (
            ("per-technique", int, "augment: new responses per technique per pair"),
            ("max-context-turns", int, "augment: context turns kept"),
            ("pairs-limit", int, "augment: use the first N context-response pairs (0: all)"),
            ("threshold", float, "student: keep a pseudo-labelled pair whose top class probability is at least X"),
            ("label-smoothing", float, "student: label smoothing of the cross-entropy"),
            ("kl-weight", float, "student: weight of the consistency KL"),
            ("kl-temperature", float, "student: temperature of the KL target"),
            ("mlm-weight", float, "student: weight of the masked-LM term (off with a frozen encoder)"),
            ("mlm-probability", float, "student: share of tokens masked for the MLM term")):
        default = getattr(MDDEvalConfig, option.replace("-", "_"))
        group.add_argument(f"--{option}", type=kind, metavar="N" if kind is int else "X",
                           help=f"{text} (default {default})")
    group.add_argument("--mask-model", help="augment: a Hugging Face masked LM for mask-and-fill (skipped without)")
    group.add_argument("--translate-forward", help="augment: seq2seq model translating out (e.g. en→de)")
    group.add_argument("--translate-backward", help="augment: seq2seq model translating back (e.g. de→en)")
    group.add_argument("--generator", help="augment: a causal or seq2seq dialogue model (skipped without)")
    group.add_argument("--balance", action=argparse.BooleanOptionalAction, default=None,
                       help="student: balance the pseudo-labelled classes (default on)")
