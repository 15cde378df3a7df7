package dagster.kstreams;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system ({@code file:}, checksummed as by default), setting a file's
 * permissions through {@code java.nio} rather than by running {@code chmod}.
 *
 * <p>Without Hadoop's native library (pyspark ships none), {@link RawLocalFileSystem} forks a
 * {@code chmod} process for every file it creates. A task's micro-batch creates four to six (its
 * offset and commit log entries, a state store's changelog, and their checksum files), each on the
 * batch's critical path: about 100 ms a batch on a busy 2-core machine (bench/README.md). It stays a
 * {@link LocalFileSystem} because Spark's RocksDB state store casts the local file system to one.
 */
public final class NioLocalFileSystem extends LocalFileSystem {
    public NioLocalFileSystem() {
        super(new Raw());
    }

    /** The raw file system under the checksums, with {@code chmod}'s work done in process. */
    public static final class Raw extends RawLocalFileSystem {
        // FsPermission's bits, lowest first: others' execute, write, read; the group's; the owner's.
        private static final PosixFilePermission[] BITS = {
            PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
            PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
            PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
        };

        @Override
        public void setPermission(Path path, FsPermission permission) throws IOException {
            short mode = permission.toShort();
            Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
            for (int bit = 0; bit < BITS.length; bit++) {
                if ((mode & (1 << bit)) != 0) {
                    permissions.add(BITS[bit]);
                }
            }
            try {
                Files.setPosixFilePermissions(pathToFile(path).toPath(), permissions);
            } catch (UnsupportedOperationException notPosix) {
                super.setPermission(path, permission);  // a file system without POSIX permissions
            }
        }
    }
}
