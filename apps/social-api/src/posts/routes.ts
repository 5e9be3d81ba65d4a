import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Forbidden, NotFound } from '../errors';
import { bearerSecurity, bodyErrors, errors, NoContent, parseId } from '../http';
import { PageQuery, Paginated, pageRequest, paginate, parseTimestampCursor } from '../pagination';
import { createUsersRepository } from '../users/repository';
import { UserIdParams } from '../users/schemas';
import { serializeUser } from '../users/serialize';
import { createPostsRepository, type PostWithAuthor } from './repository';
import { NewPost, Post, PostChanges, PostIdParams } from './schemas';

const PostPage = Paginated(Post, 'PostPage');
const PAGING_NOTE =
  'Newest first. `after` is a timestamp (one this API emitted works exactly): posts strictly older than it.';

const serializePost = (p: PostWithAuthor) => ({
  id: p.id,
  url: `/api/posts/${p.id}`,
  text: p.text,
  timestamp: p.timestamp.toISOString(),
  author: serializeUser(p.author),
});

const postsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const posts = createPostsRepository(app.database.db);
  const users = createUsersRepository(app.database.db);
  const token = { onRequest: app.requireToken };

  const existingPost = async (idText: string) => {
    const post = await posts.findById(parseId(idText));
    if (!post) throw new NotFound();
    return post;
  };

  /** 404 for no such post, 403 for someone else's. */
  const ownPost = async (idText: string, callerId: number) => {
    const id = parseId(idText);
    const author = await posts.authorOf(id);
    if (author === undefined) throw new NotFound();
    if (author !== callerId) throw new Forbidden();
    return id;
  };

  app.post(
    '/posts',
    {
      ...token,
      schema: {
        tags: ['posts'],
        summary: 'Create a new post',
        security: bearerSecurity,
        body: NewPost,
        response: { 201: Post, ...bodyErrors(401) },
      },
    },
    async (request, reply) => {
      return reply
        .status(201)
        .send(serializePost(await posts.create(request.user.id, request.body.text, app.clock())));
    },
  );

  app.get(
    '/posts',
    {
      ...token,
      schema: {
        tags: ['posts'],
        summary: 'Retrieve all posts',
        description: PAGING_NOTE,
        security: bearerSecurity,
        querystring: PageQuery,
        response: { 200: PostPage, ...errors(400, 401) },
      },
    },
    async (request) => paginate(pageRequest(request.query, parseTimestampCursor), posts.all(), serializePost),
  );

  app.get(
    '/posts/:id',
    {
      ...token,
      schema: {
        tags: ['posts'],
        summary: 'Retrieve a post by id',
        security: bearerSecurity,
        params: PostIdParams,
        response: { 200: Post, ...errors(401, 404) },
      },
    },
    async (request) => serializePost(await existingPost(request.params.id)),
  );

  app.put(
    '/posts/:id',
    {
      ...token,
      schema: {
        tags: ['posts'],
        summary: 'Edit a post',
        description: 'Only the author may edit (403 otherwise); the timestamp stays.',
        security: bearerSecurity,
        params: PostIdParams,
        body: PostChanges,
        response: { 200: Post, ...bodyErrors(401, 403, 404) },
      },
    },
    async (request) => {
      const id = await ownPost(request.params.id, request.user.id);
      if (
        request.body.text !== undefined &&
        !(await posts.updateText(id, request.user.id, request.body.text))
      )
        throw new NotFound();
      return serializePost(await existingPost(request.params.id));
    },
  );

  app.delete(
    '/posts/:id',
    {
      ...token,
      schema: {
        tags: ['posts'],
        summary: 'Delete a post',
        description: 'Only the author may delete (403 otherwise).',
        security: bearerSecurity,
        params: PostIdParams,
        response: { 204: NoContent, ...errors(401, 403, 404) },
      },
    },
    async (request, reply) => {
      const id = await ownPost(request.params.id, request.user.id);
      if (!(await posts.delete(id, request.user.id))) throw new NotFound();
      return reply.status(204).send();
    },
  );

  app.get(
    '/users/:id/posts',
    {
      ...token,
      schema: {
        tags: ['posts'],
        summary: 'Retrieve all posts from a user',
        description: PAGING_NOTE,
        security: bearerSecurity,
        params: UserIdParams,
        querystring: PageQuery,
        response: { 200: PostPage, ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const user = await users.findById(parseId(request.params.id));
      if (!user) throw new NotFound();
      return paginate(
        pageRequest(request.query, parseTimestampCursor),
        posts.byAuthor(user.id),
        serializePost,
      );
    },
  );

  app.get(
    '/feed',
    {
      ...token,
      schema: {
        tags: ['posts'],
        summary: "Retrieve the user's post feed",
        description: `Your own posts and those of everyone you follow, in one query. ${PAGING_NOTE}`,
        security: bearerSecurity,
        querystring: PageQuery,
        response: { 200: PostPage, ...errors(400, 401) },
      },
    },
    async (request) =>
      paginate(pageRequest(request.query, parseTimestampCursor), posts.feed(request.user.id), serializePost),
  );
};

export default postsRoutes;
