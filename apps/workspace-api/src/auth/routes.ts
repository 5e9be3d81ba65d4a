import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { OperationBody, operation } from '../wire/operation';
import { reads } from './permissions';

const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const op = operation(
    reads('any'),
    'credentials',
    'Check an API key pair',
    'Answers `{}` for any valid, enabled, unexpired key. POST with the pair in the body or the headers; GET with the `api-key` and `api-key-secret` headers.',
  );
  const response = { 200: Type.Object({}, { description: 'The key is valid' }), ...op.errors };
  app.post(
    '/validate_credentials',
    { config: op.config, schema: { ...op.schema, body: OperationBody(), response } },
    async () => ({}),
  );
  app.get(
    '/validate_credentials',
    { config: op.config, schema: { ...op.schema, response } },
    async () => ({}),
  );
};

export default authRoutes;
