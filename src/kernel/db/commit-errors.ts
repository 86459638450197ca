// Errors a database raises when a transaction commits (PostgreSQL's deferred triggers, such
// as the daily-volume check of migration 0020_pg_daily_volumes), turned into the API error
// the area that armed them answers. An area registers a translator at load; the kernel's
// effect transactions (kernel/idempotency.ts) pass a failed commit's error through them.

type Translator = (err: unknown) => Error | undefined;

const translators: Translator[] = [];

export function onCommitError(t: Translator): void {
  translators.push(t);
}

/** The API error a registered translator makes of `err`, else `err` itself. */
export function translateCommitError(err: unknown): unknown {
  for (const t of translators) {
    const out = t(err);
    if (out !== undefined) return out;
  }
  return err;
}
