import { Type } from 'typebox';
import { ListOf, PageQuery, TimeRangeQuery } from '../../kernel/pagination.js';

export const Permission = Type.Enum(['VIEW', 'TRANSACT', 'MANAGE'], {
  description: 'VIEW reads everything; TRANSACT sends payments; MANAGE changes configuration, tokens and customers',
});

export const ApiToken = Type.Object({
  id: Type.String({ description: 'Token:<uuid>' }),
  name: Type.String(),
  permissions: Type.Array(Permission),
  clientId: Type.String({ description: 'User name for HTTP Basic' }),
  clientSecret: Type.Optional(Type.String({ description: 'Returned once, at creation; only its hash is kept' })),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});

export const ApiTokenCreateRequest = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255, description: 'Name that identifies the token' }),
  permissions: Type.Array(Permission, { minItems: 1, description: 'Permissions granted to the token' }),
});

export const TokenListQuery = Type.Object({
  name: Type.Optional(Type.String()),
  ...TimeRangeQuery,
  ...PageQuery,
});

export const TokenListResponse = ListOf(ApiToken, 'tokens');

export const TokenIdParams = Type.Object({ tokenId: Type.String({ description: 'Token:<uuid>' }) });
