"""python manage.py icc FILE.csv --item COL --rater COL --score COL [--json] [--method auto|complete|incomplete]

All six ICC forms from a long CSV (no database needed). Empty scores are missing ratings. Bad input
exits with status 2 and a message naming the column, line or rater."""
import json
import math

import pandas as pd
from django.core.management.base import BaseCommand, CommandError

from studies.analysis.icc import FORMS, ICCInputError, icc


def _fail(message: str) -> CommandError:
    return CommandError(message, returncode=2)


class Command(BaseCommand):
    help = "Intraclass correlations (all six forms, F, df, p, 95% CI) from a long CSV of ratings."
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--item", required=True, help="column naming the rated item")
        parser.add_argument("--rater", required=True, help="column naming the rater")
        parser.add_argument("--score", required=True, help="column with the numeric score")
        parser.add_argument("--method", default="auto", choices=("auto", "complete", "incomplete"))
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
            result = icc(items[rated].to_numpy(), raters[rated].to_numpy(), scores[rated].to_numpy(),
                         method=options["method"])
        except ICCInputError as error:
            raise _fail(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict()))
            return
        self.stdout.write(f"{result.n_items} items, {result.n_raters} raters, {result.n_ratings} ratings, "
                          f"k0 = {result.k0:.3f}, {result.method} design")
        self.stdout.write(f"{'form':<9} {'ICC':>8} {'F':>9} {'df1':>6} {'df2':>8} {'p':>10}  95% CI")
        for form in FORMS:
            f = result[form]
            self.stdout.write(f"{form:<9} {f.value:8.4f} {f.F:9.3f} {f.df1:6.0f} {f.df2:8.2f} {f.p:10.2e}  "
                              f"[{f.ci95[0]:.3f}, {f.ci95[1]:.3f}]")
