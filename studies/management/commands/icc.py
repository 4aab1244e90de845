"""python manage.py icc FILE.csv --item COL --rater COL --score COL [--json] [--method auto|complete|incomplete]
[--ipsation grand-mean|sub-means]

All six ICC forms from a long CSV (no database needed). Empty scores are missing ratings; incomplete
designs follow R irrNA's iccNA (``--ipsation sub-means`` = its ``oneG = FALSE``). Bad input exits
with status 2 and a message naming the column, line or rater. Degenerate data print irrNA's defined
values and a warning line; in JSON, infinite values (irrNA's -Inf) are null and explained in "warnings"."""
import json
import math
import warnings

import pandas as pd
from django.core.management.base import BaseCommand, CommandError

from studies.analysis.icc import FORMS, IPSATIONS, ICCInputError, ICCWarning, icc


def _fail(message: str) -> CommandError:
    return CommandError(message, returncode=2)


def _strict_json(value):
    """JSON has no infinities: irrNA's -Inf conventions become null (the warnings say why)."""
    if isinstance(value, dict):
        return {key: _strict_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_strict_json(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Command(BaseCommand):
    help = "Intraclass correlations (all six forms, F, df, p, 95% CI) from a long CSV of ratings."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--item", required=True, help="column naming the rated item")
        parser.add_argument("--rater", required=True, help="column naming the rater")
        parser.add_argument("--score", required=True, help="column with the numeric score")
        parser.add_argument("--method", default="auto", choices=("auto", "complete", "incomplete"))
        parser.add_argument("--ipsation", default="grand-mean", choices=IPSATIONS,
                            help="rater-bias correction on incomplete designs (irrNA oneG = TRUE / FALSE)")
        parser.add_argument("--json", action="store_true", help="print JSON (full precision)")

    def handle(self, *args, **options):
        try:
            frame = pd.read_csv(options["file"], dtype=str, keep_default_na=False)
        except FileNotFoundError:
            raise _fail(f"{options['file']}: no such file") from None
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as error:
            raise _fail(f"{options['file']}: not a readable CSV file ({error})") from None
        for option in ("item", "rater", "score"):
            if options[option] not in frame.columns:
                raise _fail(f"--{option}: no column {options[option]!r} (columns: {', '.join(frame.columns)})")
        raw = frame[options["score"]].str.strip()
        scores = pd.to_numeric(raw.where(raw != ""), errors="coerce")
        bad = scores.isna() & (raw != "") | ~scores.isna() & ~scores.map(lambda v: math.isfinite(v) if v == v else True)
        if bad.any():
            row = int(bad.idxmax())
            raise _fail(f"line {row + 2}, column {options['score']!r}: {raw[row]!r} is not a number")
        items, raters = frame[options["item"]].str.strip(), frame[options["rater"]].str.strip()
        for name, column in (("item", items), ("rater", raters)):
            if (column == "").any():
                row = int((column == "").idxmax())
                raise _fail(f"line {row + 2}, column {options[name]!r}: the {name} is empty")
        rated = scores.notna()
        silent = sorted(set(raters) - set(raters[rated]))
        if silent:
            raise _fail(f"rater {silent[0]!r} has no ratings (every score is empty)")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ICCWarning)  # reported below, from result.warnings
                result = icc(items[rated].to_numpy(), raters[rated].to_numpy(), scores[rated].to_numpy(),
                             method=options["method"], ipsation=options["ipsation"])
        except ICCInputError as error:
            raise _fail(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(_strict_json(result.as_dict())))
            return
        method = result.method if result.ipsation is None else f"{result.method} design, {result.ipsation} ipsation"
        self.stdout.write(f"{result.n_items} items, {result.n_raters} raters, {result.n_ratings} ratings, "
                          f"k0 = {result.k0:.3f}, {method}")
        for note in result.warnings:
            self.stdout.write(f"warning: {note}")
        self.stdout.write(f"{'form':<9} {'ICC':>8} {'F':>9} {'df1':>6} {'df2':>8} {'p':>10}  95% CI")
        for form in FORMS:
            f = result[form]
            self.stdout.write(f"{form:<9} {f.value:8.4f} {f.F:9.3f} {f.df1:6.0f} {f.df2:8.2f} {f.p:10.2e}  "
                              f"[{f.ci95[0]:.3f}, {f.ci95[1]:.3f}]")
