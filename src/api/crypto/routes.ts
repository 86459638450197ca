import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { authOf, errorResponses } from '../../kernel/http.js';
import { checkSchema } from '../../kernel/validation.js';
import { EstimateCryptoWithdrawalFeeRequest, EstimateCryptoWithdrawalFeeResponse } from './schemas.js';
import { estimateWithdrawalFee, rejectEstimateBody } from './service.js';

const tags = ['Cross-Currency Transfers'];

export const cryptoRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { store } = app.deps;

  app.post(
    '/crypto/estimate-withdrawal-fee',
    {
      // An estimate reads and stores nothing: any token may ask.
      config: { auth: 'basic', permission: 'VIEW' },
      // A body its schema refuses is answered here, with the other field checks in the same 400.
      preValidation: async (req) => {
        const errors = checkSchema(EstimateCryptoWithdrawalFeeRequest, req.body ?? null);
        if (errors.length > 0) await rejectEstimateBody(store.db, authOf(req).platform, req.body, errors);
      },
      schema: {
        tags,
        operationId: 'estimateCryptoWithdrawalFee',
        summary: 'Estimate a crypto withdrawal fee',
        description:
          'What withdrawing `amount` of `currency` from a crypto internal account to `destinationAddress` on `cryptoNetwork` would cost, from the sandbox fee table: ' +
          'the network fee in the asset that pays it, converted to the withdrawal currency at the sandbox mid rate (rounded up), plus the application fee. ' +
          'Nothing is reserved or stored. The account must hold `currency` (else 400 INVALID_CURRENCY), the network must carry it and the address must be one of ' +
          'the network\'s (400 INVALID_INPUT), and `amount` must be more than `totalFee` (400 INVALID_AMOUNT, with `details.minimumAmount`).',
        body: EstimateCryptoWithdrawalFeeRequest,
        response: { 200: EstimateCryptoWithdrawalFeeResponse, ...errorResponses(404) },
      },
    },
    async (req) => estimateWithdrawalFee(store.db, authOf(req).platform, req.body),
  );
};
