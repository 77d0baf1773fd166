#!/usr/bin/env python3
"""Match invoices to payments (passes 1-3 of references/matching-rules.md).

Usage: python3 match_invoices.py invoices.csv payments.csv [--tolerance 0.02] [--window-days 10]

invoices.csv columns: id, reference, counterparty, date (YYYY-MM-DD), amount, currency
payments.csv columns: id, reference, counterparty, date (YYYY-MM-DD), amount, currency
Amounts are decimal strings in major units (e.g. 120.50). Output: matches and unmatched items as CSV-like text.
"""
import argparse
import csv
import re
import sys
from datetime import date
from decimal import Decimal

SUFFIXES = re.compile(r"\b(ltd|limited|inc|llc|gmbh|sa|sarl|bv|plc|co)\b")


def norm_ref(value):
    value = re.sub(r"[\s\-_#]", "", (value or "").upper())
    return re.sub(r"(?<=[A-Z])0+(?=\d)", "", value)


def norm_name(value):
    value = re.sub(r"[^\w\s]", " ", (value or "").lower())
    return " ".join(SUFFIXES.sub(" ", value).split())


def cents(value):
    return int((Decimal(value) * 100).to_integral_value())


def load(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["_ref"] = norm_ref(r.get("reference"))
        r["_name"] = norm_name(r.get("counterparty"))
        r["_cents"] = cents(r["amount"])
        r["_date"] = date.fromisoformat(r["date"])
        r["currency"] = r["currency"].upper()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("invoices")
    ap.add_argument("payments")
    ap.add_argument("--tolerance", default="0.02", help="amount tolerance for pass 2, in major units")
    ap.add_argument("--window-days", type=int, default=10)
    args = ap.parse_args()
    tolerance = cents(args.tolerance)

    invoices, payments = load(args.invoices), load(args.payments)
    open_inv = {r["id"]: r for r in invoices}
    open_pay = {r["id"]: r for r in payments}
    matches = []

    def take(inv, pay, pass_no):
        matches.append((pass_no, inv, pay, pay["_cents"] - inv["_cents"]))
        del open_inv[inv["id"]]
        del open_pay[pay["id"]]

    # Pass 1 and 2: reference, exact amount then within tolerance.
    for pass_no, tol in ((1, 0), (2, tolerance)):
        for pay in list(open_pay.values()):
            if not pay["_ref"]:
                continue
            cands = [i for i in open_inv.values()
                     if i["_ref"] == pay["_ref"] and i["currency"] == pay["currency"]
                     and abs(i["_cents"] - pay["_cents"]) <= tol]
            if len(cands) == 1:
                take(cands[0], pay, pass_no)

    # Pass 3: amount + counterparty + date window; ambiguous candidates are left for a human.
    ambiguous = []
    for pay in list(open_pay.values()):
        cands = [i for i in open_inv.values()
                 if i["_cents"] == pay["_cents"] and i["currency"] == pay["currency"]
                 and i["_name"] and (i["_name"] in pay["_name"] or pay["_name"] in i["_name"])
                 and 0 <= (pay["_date"] - i["_date"]).days <= args.window_days]
        if len(cands) == 1:
            take(cands[0], pay, 3)
        elif len(cands) > 1:
            ambiguous.append((pay, cands))

    out = csv.writer(sys.stdout)
    out.writerow(["pass", "invoice", "payment", "difference"])
    for pass_no, inv, pay, diff in matches:
        out.writerow([pass_no, inv["id"], pay["id"], f"{Decimal(diff) / 100:.2f}"])
    print()
    out.writerow(["unmatched_invoice", "amount", "currency"])
    for inv in open_inv.values():
        out.writerow([inv["id"], inv["amount"], inv["currency"]])
    print()
    out.writerow(["unmatched_payment", "amount", "currency", "ambiguous_candidates"])
    amb = {p["id"]: c for p, c in ambiguous}
    for pay in open_pay.values():
        out.writerow([pay["id"], pay["amount"], pay["currency"], " ".join(i["id"] for i in amb.get(pay["id"], []))])
    return 0


if __name__ == "__main__":
    sys.exit(main())
