/* Opening an image as its kind (kinds.h). */
#include "kinds.h"
#include "kmodule.h"

void kind_attach(struct image *img)
{
    img->hooks = img->kind == IMG_VMLINUX ? &kind_vmlinux : &kind_linked;
}

int kind_open(struct image *img, void **state, const char *path, bool kernel, char *err, size_t errlen)
{
    *state = NULL;
    if (kernel && kmodule_is_relocatable(path)) {
        struct kmodule *km;
        if (kmodule_open(&km, img, path, err, errlen) < 0)
            return -1;
        img->hooks = &kind_module;   /* the kernel's rules; the loader relocates a copied instruction as the original */
        *state = km;
        return 0;
    }
    if (image_open(img, path, kernel, err, errlen) < 0)
        return -1;
    kind_attach(img);
    return 0;
}

void kind_close(struct image *img, void *state)
{
    image_close(img);
    if (img->hooks && img->hooks->close)
        img->hooks->close(state);
}
