import { Type, type Static } from 'typebox';
import { idPattern } from '../../kernel/ids.js';
import { LookupQueryFields, ReceiverLookupFields } from '../lookups/schemas.js';

export const ExternalAccountLookupParams = Type.Object({
  accountId: Type.String({ description: 'System-generated id of the external account: ExternalAccount:<uuid>', examples: ['ExternalAccount:019542f5-b3e7-1d02-0000-000000000001'] }),
});

export const ExternalAccountLookupQuery = Type.Object(LookupQueryFields);
export type ExternalAccountLookupQuery = Static<typeof ExternalAccountLookupQuery>;

export const ReceiverExternalAccountLookupResponse = Type.Object(
  {
    accountId: Type.String({ description: 'The external account that was looked up', pattern: idPattern('ExternalAccount') }),
    ...ReceiverLookupFields,
  },
  { title: 'ReceiverExternalAccountLookupResponse' },
);
export type ReceiverExternalAccountLookupResponse = Static<typeof ReceiverExternalAccountLookupResponse>;
