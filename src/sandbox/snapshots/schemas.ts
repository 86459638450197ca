import { Type } from 'typebox';

/** A snapshot's name: letters, digits, `.`, `_` and `-`, starting with a letter or digit (it goes in URL paths as is). */
export const SNAPSHOT_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]*$';
export const SNAPSHOT_NAME_MAX = 64;

export const SnapshotCreateRequest = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: SNAPSHOT_NAME_MAX,
      pattern: SNAPSHOT_NAME_PATTERN,
      description: 'Unique per platform: letters, digits, `.`, `_`, `-` (up to 64, starting with a letter or digit)',
    }),
  },
  { additionalProperties: false, title: 'SandboxSnapshotCreateRequest' },
);

export const SnapshotCreateQuery = Type.Object({
  replace: Type.Optional(Type.Boolean({ description: 'Replace a snapshot of the same name (default false: a name already taken is 409 CONFLICT)' })),
});

/** A name in the path: any text; one that names no snapshot (of this platform) is 404. */
export const SnapshotNameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) });

export const SandboxSnapshot = Type.Object(
  {
    name: Type.String(),
    createdAt: Type.String({ format: 'date-time', description: 'When it was saved, on the server clock (no sandbox offset)' }),
    sandboxTime: Type.String({
      format: 'date-time',
      description: 'The platform\'s sandbox clock when it was saved (the whole store: the server clock); a restore puts the sandbox clock back to it',
    }),
    rows: Type.Integer({ description: 'Rows saved, all tables together' }),
    tables: Type.Record(Type.String(), Type.Integer(), { description: 'Rows saved per table (tables that had some)' }),
    sizeBytes: Type.Integer({ description: 'Size of the saved rows, compressed' }),
  },
  { title: 'SandboxSnapshot' },
);

export const SandboxSnapshotList = Type.Object({ data: Type.Array(SandboxSnapshot, { description: 'By name' }) }, { title: 'SandboxSnapshotList' });

export const SandboxSnapshotRestore = Type.Object(
  {
    name: Type.String(),
    sandboxTime: Type.String({ format: 'date-time', description: 'The sandbox clock now: the snapshot\'s sandboxTime' }),
    rows: Type.Integer({ description: 'Rows written back' }),
    tables: Type.Record(Type.String(), Type.Integer(), { description: 'Rows written back per table' }),
    deleted: Type.Integer({ description: 'Rows deleted first (the state the restore replaced)' }),
    durationMs: Type.Number({ description: 'How long the restore took on the server, in milliseconds' }),
  },
  { title: 'SandboxSnapshotRestore' },
);
