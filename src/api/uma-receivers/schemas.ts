import { Type, type Static } from 'typebox';
import { LookupQueryFields, ReceiverLookupFields } from '../lookups/schemas.js';

export const UmaLookupParams = Type.Object({
  receiverUmaAddress: Type.String({ description: 'UMA address of the intended receiver ($name@domain)' }),
});

export const UmaLookupQuery = Type.Object(LookupQueryFields);
export type UmaLookupQuery = Static<typeof UmaLookupQuery>;

export const ReceiverUmaLookupResponse = Type.Object(
  {
    receiverUmaAddress: Type.String({ description: 'The UMA address that was looked up' }),
    ...ReceiverLookupFields,
  },
  { title: 'ReceiverUmaLookupResponse' },
);
export type ReceiverUmaLookupResponse = Static<typeof ReceiverUmaLookupResponse>;
